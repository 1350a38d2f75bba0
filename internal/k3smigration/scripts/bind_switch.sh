#!/bin/sh
# bind_switch renames $1 (source) to $3 (backup or staging), makes an empty $1 with the same mode
# and owner, and bind-mounts $2 (target) on it; a failure undoes what was done.
# shellcheck source=lib.sh
. ./lib.sh
refuse_control_chars "$@"
LC_ALL=C; export LC_ALL
if [ -L "$1" ] || [ ! -d "$1" ]; then echo "$1 is no longer a directory" >&2; exit 1; fi
if [ -e "$3" ] || [ -L "$3" ]; then echo "$3 already exists" >&2; exit 1; fi
mv -T -- "$1" "$3" || exit 1
if mkdir -- "$1" && chmod --reference="$3" -- "$1" && chown --reference="$3" -- "$1" && mount --bind "$2" "$1"; then exit 0; fi
rmdir -- "$1" 2>/dev/null
mv -T -- "$3" "$1"
exit 1
