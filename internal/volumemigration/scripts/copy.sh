#!/bin/sh
# The copy pod's script (clusterstorage_volume_migration). The source claim is mounted read-only
# at /source, the new claim at /target.
#   copy.sh MODE MARKER
# MODE copy: one rsync pass, while the workload may still write to the source.
# MODE final: the workload is stopped; the delta pass, then a verification that compares every
# file's content (rsync --checksum, dry run): it must list nothing. When it lists something (a
# file changed within the same second and size as the first copy saw it), one pass with
# --checksum copies it and the verification runs again.
# Every line the provider reads begins with MARKER (the run's own random string): "MARKER stats"
# before rsync's --stats output, "MARKER differs <itemized change>" for each difference the
# verification finds, "MARKER verify" before each verification, "MARKER exit <status>" last.
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
# -a: permissions, times, owners (numeric), links, devices; -H hard links; -S sparse files.
copy() {
	echo "$marker stats"
	rsync -aHS --numeric-ids --delete --stats "$@" "$src/" "$dst/"
}
verify() {
	echo "$marker verify"
	rsync -aHS --numeric-ids --delete --checksum --dry-run --out-format="$marker differs %i %n%L" "$src/" "$dst/"
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
echo "$marker exit 0"
