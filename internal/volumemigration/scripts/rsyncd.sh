#!/bin/sh
# The receiving end of a copy between nodes (clusterstorage_volume_migration): an rsync daemon
# on the new volume's node, the new claim mounted at /target, reached by copy.sh on the source's
# node (REMOTE). rsync's daemon protocol is not encrypted; it authenticates the client with the
# password in SECRETS ("user:password", a Secret the migration makes and removes).
#   rsyncd.sh PORT SECRETS ID
# ADDRESS (the pod's IP, from the downward API) is the one address it listens on: the one the
# client is given. ID is the run's own random string: the "target" module's comment, which the
# daemon's own listing must show before it is taken to listen (a daemon of another run, or any
# other program, on that address and port does not), and the start of every line the provider
# reads:
#   "ID listening PORT"  the daemon listens on ADDRESS:PORT and answers as this run's;
#   "ID failed STATUS"   rsync ended before it listened (its log above says why: "bind() failed:
#                        Address already in use" when something else has the port);
#   "ID unreachable"     it runs but its listing did not answer as this run's within a minute;
#   "ID exit STATUS"     the daemon ended after it listened.
# Modules: "target" (read-write: the copy, the delta, the verification's dry runs) and "sync"
# (read-only, lists nothing: reading it first writes the new volume's data to disk, its
# pre-xfer exec, which the client waits for).
set -u
port=$1
secrets=$2
id=$3
addr=${ADDRESS:?ADDRESS: the address to listen on (the pod IP)}
# TARGET is for the script's own tests, which run it on a directory.
dir=${TARGET:-/target}
tmp=${TMPDIR:-/tmp}
conf=$tmp/rsyncd.conf
status=$tmp/rsyncd.status
pidfile=$tmp/rsyncd.pid
rm -f "$status" "$pidfile"
# Chrooted into the volume (capability SYS_CHROOT): without a chroot rsync strips the leading
# "/" of every absolute symlink it receives. Symlinks are kept as they are, owners by number
# (the chroot has no user database); the daemon stays root (uid/gid 0), as the copy pod is.
# Listening on ADDRESS only: with the node's network (host_network) nothing else of the node is
# offered, and a bind that fails fails the daemon (on every address rsync gives up only when no
# family binds: with IPv4's port taken it listened on IPv6 alone, and the client found nothing,
# or another program, on the port).
cat >"$conf" <<CONF || {
port = $port
address = $addr
use chroot = yes
munge symlinks = no
numeric ids = yes
reverse lookup = no
uid = 0
gid = 0
log file = /dev/stdout
pid file = $pidfile
[target]
	path = $dir
	comment = $id
	read only = no
	auth users = migrate
	secrets file = $secrets
	strict modes = no
[sync]
	path = $dir
	read only = yes
	list = no
	auth users = migrate
	secrets file = $secrets
	strict modes = no
	pre-xfer exec = sync -f $dir/. 2>/dev/null || sync
CONF
	echo "$id failed 1"
	exit 1
}
# The daemon runs in the background; its status lands in a file when it ends, which the wait
# below reads (a background job's end is not something every sh can be asked about portably).
(
	rsync --daemon --no-detach --config="$conf"
	echo $? >"$status.new" && mv "$status.new" "$status"
) &
# stop ends the daemon (its pid file: the subshell above is its parent).
stop() {
	[ -s "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null
	return 0
}
trap 'stop; exit 143' TERM INT
case $addr in
*:*) host="[$addr]" ;;
*) host=$addr ;;
esac
# Its own listing, until it shows ID, for a minute at most (each try bounded: a program on the
# port that accepts and says nothing must not hold it).
now() { date +%s; }
until=$(($(now) + 60))
while :; do
	# A failed bind ends rsync within this (before its first listing, which a program that has
	# the port may keep waiting).
	sleep 0.25 2>/dev/null || sleep 1
	if [ -s "$status" ]; then
		rc=$(cat "$status")
		[ "$rc" -ne 0 ] || rc=1
		echo "$id failed $rc"
		exit "$rc"
	fi
	out=$(rsync --contimeout=5 --timeout=5 "rsync://$host:$port/" 2>/dev/null)
	case $out in
	*"$id"*)
		echo "$id listening $port"
		break
		;;
	esac
	if [ "$(now)" -ge "$until" ]; then
		echo "$id unreachable"
		stop
		exit 1
	fi
done
wait
rc=$(cat "$status" 2>/dev/null || echo 1)
echo "$id exit $rc"
exit "$rc"
