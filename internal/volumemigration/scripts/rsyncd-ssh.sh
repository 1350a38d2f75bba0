#!/bin/sh
# The node's side of a copy between nodes over SSH (clusterstorage_volume_migration,
# crossnode_ssh.go), run over the provider's SSH connection to each node (with sudo when the ssh
# block asks for it).
#   rsyncd-ssh.sh prepare DIR             (the daemon's "user:password" line on stdin)
#   rsyncd-ssh.sh daemon DIR PORT PATH RSYNCD ID
#   rsyncd-ssh.sh client PATH REMOTE COPY MODE MARKER [xattrs]   (the password on stdin)
#   rsyncd-ssh.sh cleanup DIR
# prepare stops the daemon an earlier run left in DIR (a killed provider) and makes DIR again
# (mode 700) with the secrets file. daemon runs the script RSYNCD (rsyncd.sh, which says "ID
# listening PORT" once it listens) on 127.0.0.1:PORT into PATH, its configuration in DIR, its
# process id in DIR/pid (the daemon's own in DIR/rsyncd.pid). client runs the script COPY
# (copy.sh) on the source's directory PATH towards REMOTE (rsync://user@127.0.0.1:PORT, the
# provider's forwarded port on this node). cleanup stops the daemon and removes DIR.
set -eu
verb=$1
shift
# stop DIR: ends the daemon and its script, whose process ids DIR holds, if they are still ones.
stop() {
	stop_pid "$1/pid"
	stop_pid "$1/rsyncd.pid"
}
# stop_pid FILE: ends the process FILE names if its command line still says rsync.
stop_pid() {
	[ -f "$1" ] || return 0
	pid=$(cat "$1")
	case $pid in '' | *[!0-9]*) return 0 ;; esac
	if grep -q rsync "/proc/$pid/cmdline" 2>/dev/null; then
		kill "$pid" 2>/dev/null || true
		i=0
		while kill -0 "$pid" 2>/dev/null && [ "$i" -lt 50 ]; do
			sleep 0.1
			i=$((i + 1))
		done
		kill -9 "$pid" 2>/dev/null || true
	fi
}
case $verb in
prepare)
	dir=$1
	stop "$dir"
	rm -rf "$dir"
	(umask 077 && mkdir "$dir" && cat >"$dir/secrets")
	;;
daemon)
	dir=$1 port=$2 path=$3 rsyncd=$4 id=$5
	if [ ! -d "$path" ]; then
		echo "the new volume's directory $path does not exist on this node" >&2
		exit 2
	fi
	echo "$$" >"$dir/pid"
	TARGET=$path TMPDIR=$dir ADDRESS=127.0.0.1 sh -c "$rsyncd" rsyncd.sh "$port" "$dir/secrets" "$id" </dev/null &
	child=$!
	# The daemon lives as long as the provider's session: its stdin ends when the provider stops
	# it, and when the provider's connection ends (a killed provider, a cut network: sshd closes
	# the session), so no daemon outlives the run that started it by more than sshd takes to
	# notice.
	cat >/dev/null
	kill "$child" 2>/dev/null
	wait "$child"
	;;
client)
	path=$1 remote=$2 copy=$3
	shift 3
	if [ ! -d "$path" ]; then
		echo "the source volume's directory $path does not exist on this node" >&2
		exit 2
	fi
	IFS= read -r RSYNC_PASSWORD
	export RSYNC_PASSWORD
	SOURCE=$path REMOTE=$remote exec sh -c "$copy" copy.sh "$@"
	;;
cleanup)
	stop "$1"
	rm -rf "$1"
	;;
*)
	echo "unknown verb $verb" >&2
	exit 2
	;;
esac
