#!/bin/sh
# mark_complete records in the marker $2 of the copy $1 that k3s was switched to it and ran
# healthy there: from now on it holds data the original does not, and no later copy may write over
# it. $3 is the source the marker must name.
# shellcheck source=lib.sh
. ./lib.sh
refuse_control_chars "$@"
LC_ALL=C; export LC_ALL
if [ "$(head -n 1 -- "$1/$2" 2>/dev/null)" != "$3" ]; then echo "$1/$2 does not name $3" >&2; exit 1; fi
printf '%s\ncomplete\n' "$3" > "$1/$2.tmp" && mv -f -- "$1/$2.tmp" "$1/$2"
