#!/bin/sh
# remove_copy deletes the directory tree $1, staying on its filesystem, only when it holds the
# marker $2 naming $3 as its source: only a copy this resource made is ever removed.
# shellcheck source=lib.sh
. ./lib.sh
refuse_control_chars "$@"
LC_ALL=C; export LC_ALL
if [ "$(head -n 1 -- "$1/$2" 2>/dev/null)" != "$3" ]; then echo "$1 holds no marker naming $3: not removed" >&2; exit 1; fi
exec rm -rf --one-file-system -- "$1"
