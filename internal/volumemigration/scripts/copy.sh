#!/bin/sh
# The copy pod's script (clusterstorage_volume_migration). The source claim is mounted read-only
# at /source, the new claim at /target.
#   copy.sh MODE MARKER
# MODE copy: one rsync pass, while the workload may still write to the source.
# MODE final: the workload is stopped; the delta pass, then a verification that compares every
# file's content (rsync --checksum, dry run): it must list nothing. When it lists something (a
# file changed within the same second and size as the first copy saw it), one pass with
# --checksum copies it and the verification runs again.
# Both write the copy to disk (sync) before they end.
# Every line the provider reads begins with MARKER (the run's own random string): "MARKER
# sparse -S|no" first (whether sparse files are kept sparse), "MARKER stats" before rsync's
# --stats output, "MARKER differs <itemized change>" for each difference the verification finds,
# "MARKER verify" before each verification, "MARKER took <milliseconds>" after each rsync pass and
# each verification (from /proc/uptime), "MARKER exit <status>" last.
set -u
# SOURCE and TARGET are for the script's own tests, which run it on directories.
src=${SOURCE:-/source}
dst=${TARGET:-/target}
mode=$1
marker=$2
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
	rsync -aH ${sparse:+"$sparse"} --numeric-ids --delete --stats "$@" "$src/" "$dst/"
	rc=$?
	took "$t"
	return $rc
}
verify() {
	echo "$marker verify"
	t=$(now)
	rsync -aHS --numeric-ids --delete --checksum --dry-run --out-format="$marker differs %i %n%L" "$src/" "$dst/"
	rc=$?
	took "$t"
	return $rc
}
copy
rc=$?
if [ "$rc" -ne 0 ]; then
	echo "$marker exit $rc"
	exit "$rc"
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
# The copy on disk before the provider hears of it (the node could fail right after the swap).
# Not timed with the passes: `rsync -a`, which they are measured against, does not do it.
sync -f "$dst/." 2>/dev/null || sync
echo "$marker exit 0"
