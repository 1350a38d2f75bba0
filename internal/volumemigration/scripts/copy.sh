#!/bin/sh
# The copy pod's script (clusterstorage_volume_migration). The source claim is mounted read-only
# at /source, the new claim at /target.
#   copy.sh MODE MARKER [xattrs]
# With "xattrs" every pass and verification copies and compares extended attributes and ACLs
# (rsync -X -A); without, the copy reports how many files have ones it does not copy
# ("MARKER xattrs N", after the first copy).
# MODE copy: one rsync pass, while the workload may still write to the source.
# MODE final: the workload is stopped; the delta pass, then a verification that compares every
# file's content (rsync --checksum, dry run): it must list nothing. When it lists something (a
# file changed within the same second and size as the first copy saw it), one pass with
# --checksum copies it and the verification runs again.
# Both write the copy to disk (sync) before they end.
# The verification with the workload stopped reads only what may have changed: after the first
# copy, while the workload still runs, every file is compared by content once, and each file that
# matched is recorded with the inode and ctime of both sides (in STATE on the target, which no
# pass copies or deletes), taken before and after the comparison. ctime changes with every write
# and user space cannot set it, so a file whose inode and ctime are still the recorded ones on
# both sides is unchanged since it was compared: the final verification compares the contents of
# the other files only, and everything else (names, sizes, times, modes, owners, deletions) of
# every file without reading them. Only on filesystems whose ctime comes from the node's own
# clock (local ones), and only for a file whose recorded ctime is earlier than the second the
# record began in; elsewhere every file is compared by content, as before.
# Every line the provider reads begins with MARKER (the run's own random string): "MARKER
# sparse -S|no" first (whether sparse files are kept sparse), "MARKER stats" before rsync's
# --stats output, "MARKER differs <itemized change>" for each difference the verification finds,
# "MARKER verify" before each verification, "MARKER took <milliseconds>" after each rsync pass and
# each verification (from /proc/uptime), "MARKER exit <status>" last.
set -u
# SOURCE and TARGET are for the script's own tests, which run it on directories.
src=${SOURCE:-/source}
dst=${TARGET:-/target}
# REMOTE (rsync://migrate@ADDRESS:PORT, password in RSYNC_PASSWORD): the new volume is on
# another node, behind rsyncd.sh there; every pass and verification goes through it. The
# verification compares every file's content on both ends (rsync --checksum: the daemon reads
# and sums its side, this side its own), with no record (which needs both sides' inodes here).
remote=${REMOTE:-}
if [ -n "$remote" ]; then
	dst=$remote/target
fi
mode=$1
marker=$2
xa=
if [ "${3:-}" = xattrs ]; then
	xa=-XA
fi
# The record of the files compared while the workload ran, below the target's root; no pass
# copies or deletes it (excl). A source that has a file of that name is copied whole, and
# verified file by file (no record).
state=.clusterstorage-migration-verified
excl=--exclude=/$state
if [ -e "$src/$state" ]; then
	excl=
fi
if ! command -v rsync >/dev/null 2>&1; then
	echo "rsync: not found on the PATH of this image; use an image with rsync 3.x and sh (attribute image)" >&2
	echo "$marker exit 127"
	exit 127
fi
# now: the centiseconds since the node booted (/proc/uptime has two decimals; busybox's date
# cannot print fractions of a second); "" without /proc.
now() {
	up=
	read -r up _ </proc/uptime 2>/dev/null
	case $up in *.[0-9][0-9]) echo "${up%.*}${up#*.}" ;; esac
}
# took START: the milliseconds since START (now's), for the provider's log; left out without it.
took() {
	end=$(now)
	[ -n "$1" ] && [ -n "$end" ] && echo "$marker took $(((end - $1) * 10))"
	return 0
}
# has_sparse: whether the source holds a sparse file (fewer bytes allocated than its size, by
# more than a block); yes when find or stat is missing.
has_sparse() {
	command -v find >/dev/null 2>&1 && command -v stat >/dev/null 2>&1 || return 0
	find "$src/" -type f -exec stat -c '%s %b %B' {} + 2>/dev/null |
		awk '$1 > $2 * $3 + 4096 { found = 1; exit } END { exit !found }'
}
# -S keeps sparse files sparse, but reads every block it writes for zeros: a third of a copy the
# page cache serves. The first copy uses it only for a source with a sparse file; the final pass,
# a small delta, always does (a file made sparse since is then copied so).
sparse=-S
if [ "$mode" = copy ] && ! has_sparse; then
	sparse=
fi
echo "$marker sparse ${sparse:-no}"
# -a: permissions, times, owners (numeric), links, devices; -H hard links; -S sparse files.
copy() {
	echo "$marker stats"
	t=$(now)
	rsync -aH ${xa:+"$xa"} ${sparse:+"$sparse"} --numeric-ids --delete ${excl:+"$excl"} --stats "$@" "$src/" "$dst/"
	rc=$?
	took "$t"
	return $rc
}
# verify compares every file by content, or, with the record (recorded), the contents of the
# files that may have changed since it and everything else of every file.
verify() {
	echo "$marker verify"
	t=$(now)
	if [ -n "$excl" ] && [ -z "$remote" ] && [ -s "$dst/$state/verified" ] && changed >"$tmp/changed"; then
		echo "$marker unchanged $(cat "$tmp/kept")"
		rsync -aHS ${xa:+"$xa"} --numeric-ids --delete ${excl:+"$excl"} --dry-run --out-format="$marker differs %i %n%L" "$src/" "$dst/" &&
			rsync -aHS ${xa:+"$xa"} --numeric-ids --checksum --dry-run --files-from="$tmp/changed" --out-format="$marker differs %i %n%L" "$src/" "$dst/"
	else
		rsync -aHS ${xa:+"$xa"} --numeric-ids --delete ${excl:+"$excl"} --checksum --dry-run --out-format="$marker differs %i %n%L" "$src/" "$dst/"
	fi
	rc=$?
	took "$t"
	return $rc
}
# local_fs DIR: whether DIR's filesystem takes its ctimes from this node's clock.
local_fs() {
	fs=$(awk -v d="$1" '$2 == d { t = $3 } END { print t }' /proc/mounts 2>/dev/null)
	case $fs in ext2 | ext3 | ext4 | xfs | btrfs | f2fs | tmpfs | overlay) return 0 ;; esac
	# Not a mount point of its own (the script's tests): the filesystem it is on.
	[ -z "$fs" ] && [ -n "${SOURCE:-}" ] && return 0
	return 1
}
# snap DIR: "inode ctime path" of every regular file below DIR (path relative to it), but STATE.
snap() {
	(cd "$1" && find . -path "./$state" -prune -o -type f -exec stat -c '%i %Z %n' {} +) | sed 's|^\([0-9]* [0-9]*\) \./|\1 |'
}
# record writes the record: the files whose content matched while the workload ran, with their
# inode and ctime on both sides, which did not change while they were compared and lie before
# the second the record began in. Nothing is recorded where it cannot be trusted: a filesystem
# whose ctimes come from another clock, a name with a newline, a source that has STATE itself.
record() {
	[ -n "$excl" ] && [ -z "$remote" ] || return 0
	rm -rf "${dst:?}/$state"
	local_fs "$src" && local_fs "$dst" || return 0
	[ -n "$(find "$src/" -name '*
*' | head -n 1)" ] && return 0
	command -v stat >/dev/null 2>&1 && command -v find >/dev/null 2>&1 || return 0
	mkdir -p "$dst/$state" || return 0
	# The second the record begins in: a change within it or later has a later ctime.
	begin=$(date +%s)
	while [ "$(date +%s)" = "$begin" ]; do sleep 0.1 2>/dev/null || sleep 1; done
	begin=$(date +%s)
	snap "$src" >"$tmp/src1" && snap "$dst" >"$tmp/dst1" || return 0
	# 24: files vanished meanwhile (the workload runs), which are then in neither snapshot.
	rsync -aHS ${xa:+"$xa"} --numeric-ids --checksum --dry-run ${excl:+"$excl"} --out-format='%n' "$src/" "$dst/" >"$tmp/differ"
	rc=$?
	[ "$rc" -eq 0 ] || [ "$rc" -eq 24 ] || return 0
	snap "$src" >"$tmp/src2" && snap "$dst" >"$tmp/dst2" || return 0
	awk -v begin="$begin" '
		function path() { return substr($0, length($1) + length($2) + 3) }
		FILENAME == ARGV[1] { bad[$0] = 1; next }
		FILENAME == ARGV[2] { s1[path()] = $1 " " $2; c[path()] = $2; next }
		FILENAME == ARGV[3] { d1[path()] = $1 " " $2; cd[path()] = $2; next }
		FILENAME == ARGV[4] { s2[path()] = $1 " " $2; next }
		FILENAME == ARGV[5] {
			p = path()
			if ((p in s1) && (p in d1) && (p in s2) && !(p in bad) && s1[p] == s2[p] && d1[p] == $1 " " $2 && c[p] < begin && cd[p] < begin)
				print s1[p] " " d1[p] " " p
		}' "$tmp/differ" "$tmp/src1" "$tmp/dst1" "$tmp/src2" "$tmp/dst2" >"$dst/$state/verified.new" &&
		mv "$dst/$state/verified.new" "$dst/$state/verified"
}
# changed lists the source's files whose content the final verification must compare: every one
# whose inode or ctime, on either side, is not the recorded one.
changed() {
	snap "$src" >"$tmp/src3" && snap "$dst" >"$tmp/dst3" || return 1
	awk '
		function path() { return substr($0, length($1) + length($2) + 3) }
		FILENAME == ARGV[1] { v[substr($0, length($1) + length($2) + length($3) + length($4) + 5)] = $1 " " $2 " " $3 " " $4; next }
		FILENAME == ARGV[2] { d[path()] = $1 " " $2; next }
		FILENAME == ARGV[3] { p = path(); if (!(p in v) || v[p] != $1 " " $2 " " d[p]) print p; kept += (p in v) && v[p] == $1 " " $2 " " d[p] }
		END { printf "%d\n", kept > "/dev/stderr" }' "$dst/$state/verified" "$tmp/dst3" "$tmp/src3" 2>"$tmp/kept"
}
tmp=$(mktemp -d 2>/dev/null || echo "/tmp/copy.$$")
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
# The daemon on the other node said it listens before this pod was made, but the way here may
# take a moment: asked for its modules (no password needed) until it answers, for up to a minute,
# and as this migration's daemon: its listing shows DAEMON_ID (the "target" module's comment),
# which another daemon or program on that address and port does not.
answers() {
	listing=$(rsync "$remote/" 2>&1)
	lrc=$?
	[ "$lrc" -eq 0 ] || return 1
	case $listing in *"${DAEMON_ID:-}"*) return 0 ;; esac
	lrc=5
	listing="$listing
(the listing does not show the daemon's ID ${DAEMON_ID:-}: another daemon or program has the port)"
	return 1
}
if [ -n "$remote" ]; then
	i=0
	until answers; do
		i=$((i + 1))
		if [ "$i" -ge 120 ]; then
			printf '%s\n' "$listing" >&2
			echo "rsync daemon $remote does not answer as this migration's daemon" >&2
			echo "$marker exit $lrc"
			exit "$lrc"
		fi
		sleep 0.5 2>/dev/null || sleep 1
	done
fi
copy
rc=$?
# 24: source files vanished before rsync read them. While the workload runs that is its own
# doing (a database's rotated log, a temporary file); the final pass, with it stopped, copies
# what is there then.
if [ "$mode" = copy ] && [ "$rc" -eq 24 ]; then
	rc=0
fi
if [ "$rc" -ne 0 ]; then
	echo "$marker exit $rc"
	exit "$rc"
fi
# xattrs_left prints how many files have extended attributes or ACLs the copy leaves out (an
# itemized change's tenth and eleventh letters, "a" and "x"); nothing when rsync cannot tell.
xattrs_left() {
	out=$(rsync -aHXA --numeric-ids --dry-run ${excl:+"$excl"} --out-format='%i' "$src/" "$dst/" 2>/dev/null) || return 0
	printf '%s\n' "$out" | awk 'substr($0, 10, 1) == "a" || substr($0, 11, 1) == "x" { n++ } END { print n + 0 }'
}
if [ "$mode" = copy ] && [ -z "$xa" ]; then
	n=$(xattrs_left)
	[ -n "$n" ] && echo "$marker xattrs $n"
fi
if [ "$mode" = copy ]; then
	echo "$marker record"
	t=$(now)
	record
	took "$t"
fi
if [ "$mode" = final ]; then
	out=$(verify)
	rc=$?
	printf '%s\n' "$out"
	if [ "$rc" -eq 0 ] && printf '%s\n' "$out" | grep -q "^$marker differs "; then
		copy --checksum
		rc=$?
		if [ "$rc" -eq 0 ]; then
			verify
			rc=$?
		fi
	fi
	if [ "$rc" -ne 0 ]; then
		echo "$marker exit $rc"
		exit "$rc"
	fi
fi
if [ "$mode" = final ] && [ -n "$excl" ] && [ -z "$remote" ]; then
	rm -rf "${dst:?}/$state"
fi
# The copy on disk before the provider hears of it (the node could fail right after the swap).
# Not timed with the passes: `rsync -a`, which they are measured against, does not do it. On
# another node: the daemon's "sync" module syncs before it answers.
if [ -n "$remote" ]; then
	if ! rsync --list-only "$remote/sync/." >/dev/null; then
		echo "$marker exit 1"
		exit 1
	fi
else
	sync -f "$dst/." 2>/dev/null || sync
fi
echo "$marker exit 0"
