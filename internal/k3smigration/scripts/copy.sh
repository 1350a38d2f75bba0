#!/bin/sh
# copy copies $1/ into $2/ (see sync_tree), deleting what $1 no longer has. $3 is the marker
# file's name: written (naming $1) before the first copy, held locked while rsync runs, and left
# out of the copy. $4 is "final" for the copy made with k3s stopped, which then also copies the
# live datastore whatever its times say (sync_datastore). Exit 75: another copy holds the lock.
# shellcheck source=lib.sh
. ./lib.sh
refuse_control_chars "$@"
LC_ALL=C; export LC_ALL
mkdir -p -- "$2" || exit 1
if [ ! -e "$2/$3" ]; then printf '%s\n' "$1" > "$2/$3" || exit 1; fi
exec 9<"$2/$3"
flock -w 60 -E 75 9 || exit 75
rc=0
sync_tree --delete --exclude="/$3" --stats "$1/" "$2/" || rc=$?
if [ "$rc" -eq 0 ] && [ "${4:-}" = final ]; then
	sync_datastore "$1" "$2" || rc=$?
fi
exit "$rc"
