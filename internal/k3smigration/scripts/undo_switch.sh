#!/bin/sh
# undo_switch puts the directory at $3 (backup or staging) back at $1, taking away a symbolic
# link to $2 or a bind mount at $1 first. It is safe to repeat, and refuses to touch a link to
# anything else or a non-empty directory.
# shellcheck source=lib.sh
. ./lib.sh
refuse_control_chars "$@"
LC_ALL=C; export LC_ALL
if [ -L "$1" ]; then
	if [ "$(readlink -- "$1")" != "$2" ]; then echo "$1 is a link to $(readlink -- "$1"), not to $2: left alone" >&2; exit 1; fi
	rm -f -- "$1" || exit 1
fi
if [ -d "$3" ] && [ ! -L "$3" ]; then
	if mountpoint -q -- "$1"; then umount -- "$1" || exit 1; fi
	if [ -d "$1" ]; then rmdir -- "$1" || { echo "$1 is not empty: the original is kept at $3" >&2; exit 1; }; fi
	mv -T -- "$3" "$1" || exit 1
fi
if [ -L "$1" ] || [ ! -d "$1" ]; then echo "$1 is not a directory after undoing the switch" >&2; exit 1; fi
