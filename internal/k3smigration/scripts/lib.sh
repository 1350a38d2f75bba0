# shellcheck shell=sh
# Functions the migration's scripts share. A script includes this file with the line
# ". ./lib.sh": the provider puts this text in its place before it sends the script to the node,
# and shellcheck follows the same line.

# refuse_control_chars exits 64 when an argument holds a control character: a newline in a path
# would forge the key=value lines these scripts print, and no path k3s uses has one.
refuse_control_chars() {
	for a in "$@"; do
		case $a in
		*[[:cntrl:]]*)
			printf 'refusing an argument that holds a control character: %s\n' "$(safe "$a")" >&2
			exit 64 ;;
		esac
	done
}

# safe prints $1 with every control character replaced by "?", for key=value output.
safe() {
	printf '%s' "$1" | tr '[:cntrl:]' '?'
}

# holders DIR... prints, for every process that has its working directory, root, executable, an
# open file or a mapped file at or below one of the DIRs, a line "holder pid ppid pgid comm";
# then every process as "ps pid ppid pgid comm" (for finding shims' children); then the mount
# table, each line prefixed with "mountinfo ".
holders() {
	self=$$
	for d in "$@"; do
		find /proc/[0-9]*/cwd /proc/[0-9]*/root /proc/[0-9]*/exe /proc/[0-9]*/fd/ -maxdepth 1 -type l -printf '%p\t%l\n' 2>/dev/null |
			S=$d awk -F '\t' '{t = $2; sub(/ \(deleted\)$/, "", t); s = ENVIRON["S"]; if (t == s || index(t, s "/") == 1) {split($1, a, "/"); print a[3]}}'
		grep -l -F -e "$d/" /proc/[0-9]*/maps 2>/dev/null | cut -d/ -f3
	done | sort -un | while read -r pid; do
		if [ "$pid" = "$self" ]; then continue; fi
		ps -o ppid=,pgid=,comm= -p "$pid" 2>/dev/null | while read -r ppid pgid comm; do printf 'holder %s %s %s %s\n' "$pid" "$ppid" "$pgid" "$(safe "$comm")"; done
	done
	ps -e -o pid=,ppid=,pgid=,comm= | while read -r pid ppid pgid comm; do printf 'ps %s %s %s %s\n' "$pid" "$ppid" "$pgid" "$(safe "$comm")"; done
	sed 's/^/mountinfo /' /proc/self/mountinfo
}

# sync_tree runs rsync with the copy's options and "$@": archive mode with hard links, ACLs,
# extended attributes and numeric owners; sparse files kept sparse (-S); never crossing into a
# filesystem mounted below the source (-x copies a mount point as an empty directory: preflight
# refuses such mounts unless they are carried as mounts); timestamps compared to the nanosecond
# (rsync's default compares whole seconds and then misses a datastore written again in the second
# the first copy read it, with the same size).
sync_tree() {
	rsync -aHAXxS --numeric-ids --modify-window=-1 "$@"
}

# stop_containers DIR stops the containers of a k3s that ran on data dir DIR (its unit already
# stopped, which leaves them running): k3s-killall.sh with K3S_DATA_DIR=DIR when the node has it,
# then every containerd shim still running from DIR's bundled binaries, with its descendants.
stop_containers() {
	if command -v k3s-killall.sh >/dev/null 2>&1; then
		K3S_DATA_DIR=$1 k3s-killall.sh >/dev/null 2>&1 || echo "k3s-killall.sh failed (exit status $?)" >&2
	fi
	shims=
	for p in /proc/[0-9]*; do
		exe=$(readlink "$p/exe" 2>/dev/null) || continue
		case $exe in "$1"/data/*/bin/containerd-shim*) shims="$shims ${p#/proc/}" ;; esac
	done
	# shellcheck disable=SC2046,SC2086 # one word per process id
	if [ -n "$shims" ]; then kill -9 -- $(descendants $shims) 2>/dev/null; fi
	return 0
}

# descendants PID... prints the PIDs and those of all their descendants.
descendants() {
	for pid in "$@"; do
		echo "$pid"
		# shellcheck disable=SC2046 # one word per process id
		descendants $(ps -e -o ppid= -o pid= | awk -v p="$pid" '$1 == p {print $2}')
	done
}

# datastore_files DIR prints the paths, relative to DIR, of k3s's live datastore there: kine's
# sqlite files (server/db/state.db and its -wal and -shm) and embedded etcd's member data.
datastore_files() {
	for f in server/db/state.db server/db/state.db-wal server/db/state.db-shm server/db/etcd; do
		if [ -e "$1/$f" ]; then printf '%s\n' "$f"; fi
	done
}

# sync_datastore SRC DST copies SRC's live datastore (datastore_files) over DST's whatever the
# files' sizes and times say, with k3s stopped: sqlite writes its -shm through mmap, which need
# not change the file's modification time, and rewrites its WAL in place at the same size, so the
# size-and-time check of sync_tree can miss both. The files are small next to the data dir.
# With sync_tree's options: without --modify-window=-1, rsync sets the time of server/db (which
# the copied files' renames change) to the whole second only, and the verification then finds
# the directory differs (seen when k3s closed sqlite cleanly, which removes -wal and -shm).
sync_datastore() {
	(
		cd -- "$1" || exit 1
		files=$(datastore_files .)
		if [ -z "$files" ]; then exit 0; fi
		# shellcheck disable=SC2086 # the paths are k3s's fixed names, without spaces
		sync_tree -I -R --delete $files "$2/"
	)
}

# datastore_differs SRC DST succeeds when the content of a live datastore file differs between
# SRC and DST (compared byte by byte: see sync_datastore for why times do not tell).
datastore_differs() {
	for f in $(datastore_files "$1") $(datastore_files "$2"); do
		if [ -d "$1/$f" ] || [ -d "$2/$f" ]; then
			diff -r -q -- "$1/$f" "$2/$f" >/dev/null 2>&1 || return 0
		else
			cmp -s -- "$1/$f" "$2/$f" || return 0
		fi
	done
	return 1
}
