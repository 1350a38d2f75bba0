#!/bin/sh
# state describes how $1 (source) relates to $2 (target) now: "source=symlink <link>",
# "source=dir", "source=missing"; "target=dir|missing"; "same=yes" when both name the same
# directory (a link or a bind mount); "mount=yes" when $1 is a mount point.
# shellcheck source=lib.sh
. ./lib.sh
refuse_control_chars "$@"
LC_ALL=C; export LC_ALL
if [ -L "$1" ]; then printf 'source=symlink %s\n' "$(safe "$(readlink -- "$1")")"
elif [ -d "$1" ]; then echo source=dir
elif [ -e "$1" ]; then echo source=other
else echo source=missing; fi
if [ -d "$2" ] && [ ! -L "$2" ]; then echo target=dir; else echo target=missing; fi
if mountpoint -q -- "$1" 2>/dev/null; then echo mount=yes; fi
if [ -d "$1" ] && [ -d "$2" ] && [ "$(stat -L -c '%d:%i' -- "$1")" = "$(stat -L -c '%d:%i' -- "$2")" ]; then echo same=yes; fi
exit 0
