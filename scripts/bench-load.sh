#!/usr/bin/env bash
# Load (issue 29): how the time per object grows from SMALL to LARGE objects in one configuration.
# Runs the objects benchmark of scripts/bench.sh (SMALL storage classes + SMALL local PVs in one
# apply, a no-change plan, a destroy; beside it the floor, 2*SMALL terraform_data, Terraform
# alone; and hashicorp/kubernetes' resources when BENCH_ANCHOR_MIRROR is set) at both sizes, and
# prints the time per object at each and their ratio. Goal: at most 1.3x from 100 to 1,000 for
# what the provider adds (ours minus the sized floor: Terraform's own time per object grows with
# the state's size, several times from 200 to 2,000 objects, whatever the provider).
# Every command must succeed: the API server's 429s are retried by the provider, never reported.
#
#   BENCH_LOAD_SMALL  objects of each kind in the small run (default 100)
#   BENCH_LOAD_LARGE  objects of each kind in the large run (default 1000)
#   BENCH_LOAD_ROUNDS rounds at each size (default 1); medians
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

SMALL="${BENCH_LOAD_SMALL:-100}"
LARGE="${BENCH_LOAD_LARGE:-1000}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

for n in "$SMALL" "$LARGE"; do
	echo "==> load: $n storage classes + $n local PVs" >&2
	BENCH_ONLY=objects BENCH_EXTRAS=0 BENCH_OBJECTS="$n" BENCH_ROUNDS="${BENCH_LOAD_ROUNDS:-1}" \
		BENCH_SUMMARY="$work/$n.txt" scripts/bench.sh >"$work/$n.log" 2>&1 || { cat "$work/$n.log" >&2; exit 1; }
done

# per RUN OP N: milliseconds per object (2N objects) of RUN's OP at size N.
per() { awk -v r="$1" -v o="$2" -v n="$3" '$1 == r && $2 == o { printf "%.1f", $3 * 1000 / (2 * n) }' "$work/$3.txt"; }
printf '\nload: time per object, %d objects against %d (storage classes + local PVs), %s\n' \
	"$((2 * LARGE))" "$((2 * SMALL))" "$(bin/terraform version 2>/dev/null | head -1)"
printf '%-24s %10s %10s %8s %10s\n' "" "$((2 * SMALL)) (ms)" "$((2 * LARGE)) (ms)" "ratio" "goal"
for run in ours floor sized anchor; do
	grep -q "^$run " "$work/$SMALL.txt" || continue
	for op in apply plan destroy; do
		a=$(per "$run" "$op" "$SMALL") b=$(per "$run" "$op" "$LARGE")
		printf '%-24s %10s %10s %7.2fx %10s\n' "$run $op" "$a" "$b" "$(bc -l <<<"$b / $a")" -
	done
done
# What the provider adds per object beyond the CLI's own cost: ours minus the floor, and ours
# minus the sized floor (the CLI alone with a state as large as ours: Terraform's own time per
# object grows with the state's size, so this is the provider's share).
for floor in floor sized; do
	for op in apply plan destroy; do
		a=$(bc -l <<<"$(per ours "$op" "$SMALL") - $(per "$floor" "$op" "$SMALL")")
		b=$(bc -l <<<"$(per ours "$op" "$LARGE") - $(per "$floor" "$op" "$LARGE")")
		goal=-
		[[ $floor == sized && $op != plan ]] && goal=1.3x
		printf '%-24s %10.1f %10.1f %8s %10s\n' "ours - $floor $op" "$a" "$b" \
			"$(if (($(bc <<<"$a > 0 && $b >= 0"))); then printf '%.2fx' "$(bc -l <<<"$b / $a")"; else echo -; fi)" "$goal"
	done
done
echo "(ours: clusterstorage; floor: terraform_data, the CLI alone; sized: the same with each object's"
echo " state as large as ours'; anchor: hashicorp/kubernetes)"
