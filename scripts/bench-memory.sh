#!/usr/bin/env bash
# Memory (issue 43): the provider's peak RSS during apply, no-change plan and destroy of N storage
# classes + N local PVs (create_directory = false) at each size of BENCH_MEMORY_SIZES, side by side
# with hashicorp/kubernetes' same objects when BENCH_ANCHOR_MIRROR is set (see scripts/bench.sh),
# and the top entries of the provider's heap profiles (CLUSTERSTORAGE_HEAP_PROFILE: the profile
# of the largest live heap of any provider process of the command) at plan and apply. Goal: peak
# RSS at 400 + 400 no higher than hashicorp/kubernetes', and growth from the smallest to the
# largest size under 10 MiB.
#
#   BENCH_MEMORY_SIZES  objects of each kind per size (default "100 400 1000")
#   BENCH_MEMORY_TOP    heap profile entries printed (default 12)
#   BENCH_CLI           the CLI (default bin/terraform)
#   BENCH_MEMORY_KEEP   a directory to copy the heap profiles to (<size>-<op>/heap-<pid>.pb.gz)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=scripts/lib.sh
source scripts/lib.sh

SIZES="${BENCH_MEMORY_SIZES:-100 400 1000}"
TOP="${BENCH_MEMORY_TOP:-12}"
CLI="${BENCH_CLI:-$ROOT/bin/terraform}"

work="$(mktemp -d)"
bench_build "$work"
destroy_left() { bench_destroy_left "$CLI" "$work"/run-*/; }
trap 'destroy_left; cleanup_work "$work"; cluster_down_if_started' EXIT

node="$(bin/kube kubectl --kubeconfig "$KUBECONFIG_PATH" get nodes -o 'jsonpath={.items[0].metadata.name}')"
prefix="benchmem-$(printf '%04x%04x' $RANDOM $RANDOM)"

# ours_tf N / anchor_tf N: N classes + N local PVs, the shape of scripts/bench.sh's objects.
ours_tf() { bench_objects_tf "$1" "$prefix" "$node"; }
anchor_tf() { bench_anchor_tf "$1" "$prefix" "$node"; }

runs=(ours)
if [[ -n "${BENCH_ANCHOR_MIRROR:-}" ]]; then
	bench_anchor_rc "$work/anchor.tfrc"
	runs+=(anchor)
fi

for n in $SIZES; do
	for run in "${runs[@]}"; do
		dir="$work/run-$run-$n"
		mkdir -p "$dir"
		echo "$work/$run.tfrc" >"$dir/cli.path"
		"${run}_tf" "$n" >"$dir/main.tf"
		export TF_CLI_CONFIG_FILE="$work/$run.tfrc"
		if [[ $run == anchor ]]; then
			"$CLI" -chdir="$dir" init -input=false >"$dir/init.log" 2>&1 || { cat "$dir/init.log" >&2; exit 1; }
		fi
		for op in apply plan destroy; do
			echo "==> memory: $n + $n, $run $op" >&2
			args=(-auto-approve -input=false)
			[[ $op == plan ]] && args=(-detailed-exitcode -input=false)
			prof="$work/prof/$n-$op"
			mkdir -p "$prof"
			read -r s mb anon < <(timed env CLUSTERSTORAGE_HEAP_PROFILE="$prof" "$CLI" -chdir="$dir" "$op" "${args[@]}")
			echo "$mb $anon $s" >"$work/$run-$n-$op"
		done
	done
done

if [[ -n "${BENCH_MEMORY_KEEP:-}" ]]; then
	mkdir -p "$BENCH_MEMORY_KEEP"
	cp -r "$work/prof/." "$BENCH_MEMORY_KEEP/"
fi

# largest PROFDIR: the profile of the provider process with the largest live heap.
largest() {
	local best="" max=0 f v
	for f in "$1"/heap-*.txt; do
		[[ -f $f ]] || continue
		v=$(cat "$f")
		((v > max)) && max=$v best=${f%.txt}.pb.gz
	done
	echo "$best"
}
field() { [[ -f $work/$1 ]] && cut -d' ' -f"$2" "$work/$1" || echo -; }

printf '\nmemory: provider peak RSS (MiB; anonymous part in parentheses), N storage classes + N local PVs, %s\n' "$("$CLI" version | head -1)"
printf '%-14s %20s %20s %20s   %s\n' "" "apply" "plan" "destroy" "hashicorp/kubernetes (apply / plan / destroy)"
for n in $SIZES; do
	row=()
	for op in apply plan destroy; do row+=("$(field "ours-$n-$op" 1) ($(field "ours-$n-$op" 2))"); done
	printf '%-14s %20s %20s %20s   %s / %s / %s\n' "$n + $n" "${row[@]}" \
		"$(field "anchor-$n-apply" 1)" "$(field "anchor-$n-plan" 1)" "$(field "anchor-$n-destroy" 1)"
done
read -r first _ <<<"$SIZES"
last="${SIZES##* }"
for op in apply plan destroy; do
	printf 'growth %s + %s -> %s + %s, %s: %+d MiB (goal: under 10)\n' "$first" "$first" "$last" "$last" "$op" \
		"$(($(field "ours-$last-$op" 1) - $(field "ours-$first-$op" 1)))"
done

for n in $SIZES; do
	for op in plan apply; do
		p=$(largest "$work/prof/$n-$op")
		[[ -n $p ]] || continue
		printf '\nheap profile, %s + %s, %s (the provider process with the largest live heap, %s MiB):\n' "$n" "$n" "$op" \
			"$(($(cat "${p%.pb.gz}.txt") >> 20))"
		go tool pprof -top -symbolize=none -sample_index=inuse_space -nodecount="$TOP" "$p" 2>&1 | sed -n '/^Showing/,$p' | sed 's/^/  /' || true
	done
done
