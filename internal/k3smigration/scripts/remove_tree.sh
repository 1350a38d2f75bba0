#!/bin/sh
# remove_tree deletes the directory tree $1, staying on its filesystem; $2 is the source it was
# backed up from (a guard against removing anything else: $1 must start with "$2." and be longer).
# shellcheck source=lib.sh
. ./lib.sh
refuse_control_chars "$@"
LC_ALL=C; export LC_ALL
case $1 in "$2".?*) ;; *) echo "refusing to remove $1" >&2; exit 1;; esac
exec rm -rf --one-file-system -- "$1"
