#!/bin/sh
# rename renames $1 to $2, refusing to replace anything at $2.
# shellcheck source=lib.sh
. ./lib.sh
refuse_control_chars "$@"
LC_ALL=C; export LC_ALL
if [ -e "$2" ] || [ -L "$2" ]; then echo "$2 already exists" >&2; exit 1; fi
exec mv -T -- "$1" "$2"
