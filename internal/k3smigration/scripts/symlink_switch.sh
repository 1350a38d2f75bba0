#!/bin/sh
# symlink_switch renames $1 (source) to $3 (backup or staging) and puts a symbolic link to $2
# (target) in its place; when the link cannot be made, the rename is undone.
# shellcheck source=lib.sh
. ./lib.sh
refuse_control_chars "$@"
LC_ALL=C; export LC_ALL
if [ -L "$1" ] || [ ! -d "$1" ]; then echo "$1 is no longer a directory" >&2; exit 1; fi
if [ -e "$3" ] || [ -L "$3" ]; then echo "$3 already exists" >&2; exit 1; fi
mv -T -- "$1" "$3" || exit 1
if ! ln -s -T -- "$2" "$1"; then mv -T -- "$3" "$1"; exit 1; fi
