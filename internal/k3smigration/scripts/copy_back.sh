#!/bin/sh
# copy_back copies $1/ (the copy k3s ran on) back over $2/ (the original), leaving out the marker
# file $3 at the top of either, deleting what $1 no longer has; k3s is stopped, so the live
# datastore is copied whatever its times say (sync_datastore).
# shellcheck source=lib.sh
. ./lib.sh
refuse_control_chars "$@"
LC_ALL=C; export LC_ALL
if [ ! -d "$1" ] || [ ! -d "$2" ]; then echo "$1 or $2 is not a directory" >&2; exit 1; fi
sync_tree --delete --exclude="/$3" --stats "$1/" "$2/" && sync_datastore "$1" "$2"
