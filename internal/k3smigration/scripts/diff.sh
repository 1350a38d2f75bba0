#!/bin/sh
# diff prints what rsync would still change to make $2 like $1 (nothing when they are equal in
# content and metadata), and a line for the live datastore when its content differs (which
# rsync's size-and-time check can miss: see sync_datastore). $3 is the marker file's name, left
# out.
# shellcheck source=lib.sh
. ./lib.sh
refuse_control_chars "$@"
LC_ALL=C; export LC_ALL
sync_tree -n --delete --exclude="/$3" -i "$1/" "$2/" || exit
if datastore_differs "$1" "$2"; then echo "datastore content differs (server/db)"; fi
