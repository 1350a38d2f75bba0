#!/usr/bin/env bash
# Compiles the provider for every GOOS/GOARCH pair .goreleaser.yml releases (its builds' goos x
# goarch, minus its ignore entries), as goreleaser builds them: CGO_ENABLED=0, -trimpath, GOARM 6
# (goreleaser's default for arm). Nothing is kept (-o /dev/null): it proves that each release
# target compiles, which the release workflow (.github/workflows/release.yml) would otherwise
# find out only on a tag.
#
#   scripts/cross-build.sh                 every pair, JOBS (default 2) at a time
#   scripts/cross-build.sh linux/arm64     only the pairs named (each must be one the config lists)
#   scripts/cross-build.sh --json          prints the pairs as a JSON array and builds nothing (the
#                                          matrix of .github/workflows/test.yml's cross-build job)
#
# Each pair compiles every dependency again (Helm, client-go): cold, minutes per pair on 2 cores.
# Run it at a low priority on a shared machine: `nice -n 19 scripts/cross-build.sh`. .ci/run
# builds two pairs (`make cross-build`) beside the tests at the lowest priority. Exits non-zero
# when any pair fails; the log of each failed pair is printed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

config=.goreleaser.yml
JOBS="${JOBS:-2}"

# goreleaser_pairs prints "goos/goarch" for each pair of the config's first build, without its
# ignore entries. It reads the two list styles YAML allows for these keys (flow: `goos: [a, b]`,
# block: `goos:` then `- a` lines) and `- goos: x` / `goarch: y` ignore entries.
goreleaser_pairs() {
	awk '
		function strip(s) { gsub(/["\047 \t\r]/, "", s); return s }
		function flow(s,   n, i, parts) {
			sub(/^[^[]*\[/, "", s); sub(/\].*$/, "", s)
			n = split(s, parts, ",")
			for (i = 1; i <= n; i++) add(strip(parts[i]))
		}
		function add(v) { if (v == "") return; if (key == "goos") os[++nos] = v; else arch[++narch] = v }
		/^[^ \t#-]/ { key = ""; inignore = 0 }               # a top-level key ends the build
		/^[ \t-]*goos:/ && !inignore {
			key = "goos"; if ($0 ~ /\[/) { flow($0); key = "" }; next
		}
		/^[ \t-]*goarch:/ && !inignore {
			key = "goarch"; if ($0 ~ /\[/) { flow($0); key = "" }; next
		}
		/^[ \t]*ignore:/ { key = ""; inignore = 1; next }
		inignore && /^[ \t]*-[ \t]*goos:/ { v = $0; sub(/^.*goos:/, "", v); igos = strip(v); next }
		inignore && /^[ \t]*goarch:/ { v = $0; sub(/^.*goarch:/, "", v); ignored[igos "/" strip(v)] = 1; next }
		inignore && /^[ \t]*[a-z_]+:/ && !/goos:|goarch:/ { inignore = 0 }
		key != "" && /^[ \t]*-[ \t]*[^ \t]/ { v = $0; sub(/^[ \t]*-/, "", v); add(strip(v)); next }
		key != "" && /^[ \t]*[a-z_]+:/ { key = "" }
		END {
			for (i = 1; i <= nos; i++)
				for (j = 1; j <= narch; j++)
					if (!((os[i] "/" arch[j]) in ignored)) print os[i] "/" arch[j]
		}
	' "$config"
}

mapfile -t all < <(goreleaser_pairs)
if ((${#all[@]} == 0)); then
	echo "no goos/goarch pairs found in $config" >&2
	exit 1
fi
if [[ ${1-} == --json ]]; then
	printf '['
	sep=""
	for p in "${all[@]}"; do
		printf '%s"%s"' "$sep" "$p"
		sep=","
	done
	printf ']\n'
	exit 0
fi
pairs=("${all[@]}")
if (($# > 0)); then
	pairs=()
	for want in "$@"; do
		found=""
		for p in "${all[@]}"; do [[ $p == "$want" ]] && found=1; done
		if [[ -z $found ]]; then
			echo "$want is not a target of $config (its targets: ${all[*]})" >&2
			exit 2
		fi
		pairs+=("$want")
	done
fi

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

# build PAIR: one pair, its output in $logs/<goos>-<goarch>.log, its exit status in .rc.
build() {
	local pair=$1 goos=${1%/*} goarch=${1#*/} start=$SECONDS rc=0
	local log="$logs/$goos-$goarch"
	CGO_ENABLED=0 GOOS=$goos GOARCH=$goarch GOARM=6 \
		go build -trimpath -ldflags "-s -w -X main.version=cross-build" -o /dev/null . >"$log.log" 2>&1 || rc=$?
	echo "$rc" >"$log.rc"
	printf '%-16s %s (%ds)\n' "$pair" "$([[ $rc == 0 ]] && echo ok || echo "FAILED (exit $rc)")" "$((SECONDS - start))"
}

echo "building ${#pairs[@]} targets of $config, $JOBS at a time: ${pairs[*]}"
running=0
for pair in "${pairs[@]}"; do
	if ((running >= JOBS)); then
		wait -n || true
		running=$((running - 1))
	fi
	build "$pair" &
	running=$((running + 1))
done
wait

failed=()
for pair in "${pairs[@]}"; do
	f="$logs/${pair%/*}-${pair#*/}"
	if [[ $(cat "$f.rc") != 0 ]]; then
		failed+=("$pair")
		printf '\n--- %s\n' "$pair"
		cat "$f.log"
	fi
done
if ((${#failed[@]} > 0)); then
	printf '\n%d of %d targets failed to build: %s\n' "${#failed[@]}" "${#pairs[@]}" "${failed[*]}" >&2
	exit 1
fi
printf '\nall %d targets built\n' "${#pairs[@]}"
