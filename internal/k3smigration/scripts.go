package k3smigration

// The shell scripts the migration runs on the node. Each is constant text run with node.Script:
// every value (paths, the service name) arrives as a positional parameter and is only ever used
// double-quoted, so no user input is ever parsed by the node's shell.

// MarkerName is the file the migration keeps at the top of the directory it copies into. It
// names the source the copy came from, so that an interrupted migration can be resumed into the
// same target (which is otherwise required to be empty), and it is the lock that keeps two copies
// from running into the same target at once. Every copy and comparison leaves it out.
const MarkerName = ".clusterstorage-k3s-migration"

// preflightScript describes $1 (source) and $2 (target) as key=value lines; $3 is MarkerName.
const preflightScript = `LC_ALL=C; export LC_ALL
src=$1 dst=$2 marker=$3
if [ -L "$src" ]; then printf 'source=symlink\nsource_link=%s\n' "$(readlink -- "$src")"; exit 0; fi
if [ ! -e "$src" ]; then echo source=missing; exit 0; fi
if [ ! -d "$src" ]; then echo source=notdir; exit 0; fi
echo source=dir
rs=$(realpath -e -- "$src") || exit 1
printf 'source_real=%s\n' "$rs"
rd=$(realpath -m -- "$dst") || exit 1
printf 'target_real=%s\n' "$rd"
for d in server agent data; do if [ -d "$src/$d" ]; then printf 'layout=%s\n' "$d"; fi; done
if mountpoint -q -- "$src"; then echo source_mountpoint=yes; fi
if [ -L "$dst" ]; then echo target=symlink
elif [ ! -e "$dst" ]; then echo target=missing
elif [ ! -d "$dst" ]; then echo target=notdir
else
	if [ -f "$dst/$marker" ]; then printf 'target_marker=%s\n' "$(head -n 1 -- "$dst/$marker")"; fi
	if [ -n "$(find "$dst" -mindepth 1 -maxdepth 1 ! -name "$marker" -print -quit)" ]; then echo target=nonempty; else echo target=empty; fi
fi
p=$rd
while [ ! -e "$p" ]; do p=$(dirname -- "$p"); done
printf 'target_existing=%s\n' "$p"
if [ "$(stat -c %d -- "$rs")" = "$(stat -c %d -- "$p")" ]; then echo same_fs=yes; fi
printf 'source_df=%s\n' "$(df -B1 --output=avail,size,fstype,source,target -- "$rs" | tail -n 1)"
printf 'target_df=%s\n' "$(df -B1 --output=avail,size,fstype,source,target -- "$p" | tail -n 1)"
printf 'source_used=%s\n' "$(du -s -x -B1 -- "$rs" | cut -f1)"
printf 'source_apparent=%s\n' "$(du -s -x -B1 --apparent-size -- "$rs" | cut -f1)"
for t in rsync flock sha256sum; do command -v "$t" >/dev/null 2>&1 || printf 'missing_tool=%s\n' "$t"; done
exit 0`

// servicesScript lists the k3s units systemctl knows as "service=<name> <state>", then the unit
// text of each after a "unit=<name>" line.
const servicesScript = `LC_ALL=C; export LC_ALL
command -v systemctl >/dev/null 2>&1 || { echo "systemctl not found on the node: only systemd-managed k3s is supported" >&2; exit 1; }
for s in k3s k3s-agent; do
	if systemctl cat "$s" >/dev/null 2>&1; then
		printf 'service=%s %s\n' "$s" "$(systemctl is-active "$s" 2>/dev/null)"
	fi
done
for s in k3s k3s-agent; do
	if systemctl cat "$s" >/dev/null 2>&1; then
		printf 'unit=%s\n' "$s"
		systemctl cat "$s" 2>/dev/null | grep -v '^unit='
	fi
done
exit 0`

// copyScript copies $1/ into $2/ with rsync, keeping hard links, ACLs, extended attributes and
// numeric owners, without crossing into other filesystems mounted below $1 (container root
// filesystems), deleting what $1 no longer has. Timestamps are compared to the nanosecond
// (--modify-window=-1): rsync's default compares whole seconds, and then misses a datastore written
// again in the second the first copy read it, with the same size (the verify step caught exactly
// that in this package's tests). $3 is MarkerName, written (with $1) before the
// first copy and held locked while rsync runs. Exit 75: another copy holds the lock.
const copyScript = `LC_ALL=C; export LC_ALL
mkdir -p -- "$2" || exit 1
if [ ! -e "$2/$3" ]; then printf '%s\n' "$1" > "$2/$3" || exit 1; fi
exec flock -w 60 -E 75 "$2/$3" rsync -aHAXx --numeric-ids --modify-window=-1 --delete --exclude="/$3" --stats "$1/" "$2/"`

// diffScript prints what rsync would still change to make $2 like $1 (nothing when they are
// equal in content and metadata). $3 is MarkerName.
const diffScript = `LC_ALL=C; export LC_ALL
exec rsync -aHAXxn --numeric-ids --modify-window=-1 --delete --exclude="/$3" -i "$1/" "$2/"`

// manifestScript counts the entries of $1 by type and sums the regular files' sizes ($2 is
// MarkerName, left out), then prints the SHA-256 of the files k3s cannot do without: the
// datastore, the token, the credentials and certificates, and the agent's own keys.
const manifestScript = `LC_ALL=C; export LC_ALL
cd -- "$1" || exit 1
find . -xdev ! -path "./$2" -printf '%y %s\n' | awk '{n[$1]++; if ($1 == "f") b += $2} END {printf "count dirs=%.0f files=%.0f links=%.0f other=%.0f bytes=%.0f\n", n["d"], n["f"], n["l"], NR - n["d"] - n["f"] - n["l"], b}'
{
	find server/db server/cred server/tls -xdev -type f 2>/dev/null
	if [ -f server/token ]; then echo server/token; fi
	if [ -f server/node-token ]; then echo server/node-token; fi
	find agent -maxdepth 1 -type f 2>/dev/null
} | sort | while IFS= read -r f; do
	printf 'sum %s %s\n' "$(sha256sum < "$f" | cut -d' ' -f1)" "$f" || exit 1
done`

// holdersFunc defines holders DIR...: for every process that has its working directory, root,
// executable, an open file or a mapped file below one of the DIRs, a line "holder pid ppid pgid
// comm"; then every process as "ps pid ppid pgid comm" (for finding shims' children); then the
// mount table, each line prefixed with "mountinfo ".
const holdersFunc = `
holders() {
	self=$$
	for d in "$@"; do
		find /proc/[0-9]*/cwd /proc/[0-9]*/root /proc/[0-9]*/exe /proc/[0-9]*/fd/ -maxdepth 1 -type l -printf '%p\t%l\n' 2>/dev/null |
			S=$d awk -F '\t' '{t = $2; sub(/ \(deleted\)$/, "", t); s = ENVIRON["S"]; if (t == s || index(t, s "/") == 1) {split($1, a, "/"); print a[3]}}'
		grep -l -F -e "$d/" /proc/[0-9]*/maps 2>/dev/null | cut -d/ -f3
	done | sort -un | while read -r pid; do
		if [ "$pid" = "$self" ]; then continue; fi
		ps -o ppid=,pgid=,comm= -p "$pid" 2>/dev/null | while read -r ppid pgid comm; do printf 'holder %s %s %s %s\n' "$pid" "$ppid" "$pgid" "$comm"; done
	done
	ps -e -o pid=,ppid=,pgid=,comm= | while read -r pid ppid pgid comm; do printf 'ps %s %s %s %s\n' "$pid" "$ppid" "$pgid" "$comm"; done
	sed 's/^/mountinfo /' /proc/self/mountinfo
}
`

// stopScript stops unit $1, then runs k3s-killall.sh when the node has it, with K3S_DATA_DIR set
// to $2: it stops the containers (whose shims k3s leaves running on purpose when its unit stops)
// and unmounts their filesystems. It prints "killall=absent" when the script is not installed,
// the unit's state, and then what holders says about $2 and the further paths.
const stopScript = `LC_ALL=C; export LC_ALL` + holdersFunc + `
svc=$1; shift
systemctl stop "$svc" || exit 1
if command -v k3s-killall.sh >/dev/null 2>&1; then
	K3S_DATA_DIR=$1 k3s-killall.sh >/dev/null 2>&1 || echo killall=failed
else
	echo killall=absent
fi
printf 'state=%s\n' "$(systemctl is-active "$svc" 2>/dev/null)"
holders "$@"`

// killScript sends signal $1 to the $2 process ids (negative: process groups) that follow,
// waits up to 2s for them to be gone, and prints what holders says about the remaining arguments.
const killScript = `LC_ALL=C; export LC_ALL` + holdersFunc + `
sig=$1 n=$2; shift 2
pids=
i=0
while [ "$i" -lt "$n" ]; do
	case $1 in -[0-9]*|[0-9]*) pids="$pids $1" ;; *) echo "not a process id: $1" >&2; exit 1 ;; esac
	shift; i=$((i+1))
done
kill -s "$sig" -- $pids 2>/dev/null
i=0
while [ "$i" -lt 20 ]; do
	alive=
	for p in $pids; do if kill -0 -- "$p" 2>/dev/null; then alive=1; fi; done
	if [ -z "$alive" ]; then break; fi
	sleep 0.1; i=$((i+1))
done
holders "$@"`

// umountScript unmounts the $2 mount points that follow (never lazily), printing "umount_error=..."
// for each that fails, then the state of unit $1 and what holders says about the remaining
// arguments.
const umountScript = `LC_ALL=C; export LC_ALL` + holdersFunc + `
svc=$1 n=$2; shift 2
i=0
while [ "$i" -lt "$n" ]; do
	if ! out=$(umount "$1" 2>&1); then printf 'umount_error=%s\n' "$(printf '%s' "$out" | tr '\n' ' ')"; fi
	shift; i=$((i+1))
done
printf 'state=%s\n' "$(systemctl is-active "$svc" 2>/dev/null)"
holders "$@"`

// symlinkSwitchScript renames $1 (source) to $3 (backup) and puts a symbolic link to $2 (target)
// in its place; when the link cannot be made, the rename is undone.
const symlinkSwitchScript = `LC_ALL=C; export LC_ALL
if [ -L "$1" ] || [ ! -d "$1" ]; then echo "$1 is no longer a directory" >&2; exit 1; fi
if [ -e "$3" ] || [ -L "$3" ]; then echo "backup path $3 already exists" >&2; exit 1; fi
mv -T -- "$1" "$3" || exit 1
if ! ln -s -T -- "$2" "$1"; then mv -T -- "$3" "$1"; exit 1; fi`

// renameScript renames $1 to $2, refusing to replace anything at $2.
const renameScript = `LC_ALL=C; export LC_ALL
if [ -e "$2" ] || [ -L "$2" ]; then echo "$2 already exists" >&2; exit 1; fi
exec mv -T -- "$1" "$2"`

// bindSwitchScript renames $1 (source) to $3 (backup), makes an empty $1 with the same mode and
// owner, and bind-mounts $2 (target) on it; a failure undoes what was done.
const bindSwitchScript = `LC_ALL=C; export LC_ALL
if [ -L "$1" ] || [ ! -d "$1" ]; then echo "$1 is no longer a directory" >&2; exit 1; fi
if [ -e "$3" ] || [ -L "$3" ]; then echo "backup path $3 already exists" >&2; exit 1; fi
mv -T -- "$1" "$3" || exit 1
if mkdir -- "$1" && chmod --reference="$3" -- "$1" && chown --reference="$3" -- "$1" && mount --bind "$2" "$1"; then exit 0; fi
rmdir -- "$1" 2>/dev/null
mv -T -- "$3" "$1"
exit 1`

// undoSwitchScript puts the original directory back at $1 from $3 (backup), taking away a
// symbolic link to $2 or a bind mount at $1 first. It is safe to repeat, and refuses to touch a
// link to anything else or a non-empty directory.
const undoSwitchScript = `LC_ALL=C; export LC_ALL
if [ -L "$1" ]; then
	if [ "$(readlink -- "$1")" != "$2" ]; then echo "$1 is a link to $(readlink -- "$1"), not to $2: left alone" >&2; exit 1; fi
	rm -f -- "$1" || exit 1
fi
if [ -d "$3" ] && [ ! -L "$3" ]; then
	if mountpoint -q -- "$1"; then umount -- "$1" || exit 1; fi
	if [ -d "$1" ]; then rmdir -- "$1" || { echo "$1 is not empty: the original is kept at $3" >&2; exit 1; }; fi
	mv -T -- "$3" "$1" || exit 1
fi
if [ -L "$1" ] || [ ! -d "$1" ]; then echo "$1 is not a directory after undoing the switch" >&2; exit 1; fi`

// stateScript describes how $1 (source) relates to $2 (target) now: "source=symlink <link>",
// "source=dir", "source=missing"; "target=dir|missing"; "same=yes" when both name the same
// directory (a link or a bind mount); "mount=yes" when $1 is a mount point.
const stateScript = `LC_ALL=C; export LC_ALL
if [ -L "$1" ]; then printf 'source=symlink %s\n' "$(readlink -- "$1")"
elif [ -d "$1" ]; then echo source=dir
elif [ -e "$1" ]; then echo source=other
else echo source=missing; fi
if [ -d "$2" ] && [ ! -L "$2" ]; then echo target=dir; else echo target=missing; fi
if mountpoint -q -- "$1" 2>/dev/null; then echo mount=yes; fi
if [ -d "$1" ] && [ -d "$2" ] && [ "$(stat -L -c '%d:%i' -- "$1")" = "$(stat -L -c '%d:%i' -- "$2")" ]; then echo same=yes; fi
exit 0`

// removeTreeScript deletes the directory tree $1, staying on its filesystem; $2 must be the
// marker-less original source name it was backed up from (a guard against removing anything
// else: $1 must start with $2 and be longer).
const removeTreeScript = `LC_ALL=C; export LC_ALL
case $1 in "$2".?*) ;; *) echo "refusing to remove $1" >&2; exit 1;; esac
exec rm -rf --one-file-system -- "$1"`

// removeCopyScript deletes the directory tree $1, staying on its filesystem, only when it holds
// the marker $2 naming $3 as its source: only a copy this resource made is ever removed.
const removeCopyScript = `LC_ALL=C; export LC_ALL
if [ "$(head -n 1 -- "$1/$2" 2>/dev/null)" != "$3" ]; then echo "$1 holds no marker naming $3: not removed" >&2; exit 1; fi
exec rm -rf --one-file-system -- "$1"`
