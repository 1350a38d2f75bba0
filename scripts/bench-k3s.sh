#!/usr/bin/env bash
# The k3s data dir migration benchmark (issue 6): on a generated data dir of about 1 GiB with 1% of
# it rewritten between the two copies, k3s's downtime against a one-phase stop-copy-start (goal:
# at most 10% of it), and the first copy's throughput against a plain `rsync -a` of the same tree
# (goal: at least 0.9x). Runs against the stand-in k3s node of internal/k3smigration (real sshd,
# rsync and files on this machine; needs root). CLUSTERSTORAGE_BENCH_MIB changes the size of the
# blobs (default 900, plus 100 MiB of small files). The machine should be otherwise idle: the numbers
# are wall-clock times.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
scripts/deps.sh

out=$(CLUSTERSTORAGE_BENCH=1 go test -trimpath -count=1 -v -timeout 60m -run '^TestBenchK3sMigration$' ./internal/k3smigration/ 2>&1) || {
	printf '%s\n' "$out" >&2
	exit 1
}
printf '%s\n' "$out" | grep '^BENCH ' | sed 's/^BENCH /  /'
get() { printf '%s\n' "$out" | sed -n "s/^BENCH $1=//p"; }
downtime=$(get downtime_vs_one_phase)
throughput=$(get copy_throughput_vs_plain_rsync)
verdict() { if awk -v v="$1" -v g="$2" -v op="$3" 'BEGIN { exit !(op == "le" ? v <= g : v >= g) }'; then echo met; else echo MISSED; fi; }
echo "downtime / one-phase downtime = $downtime (goal <= 0.10: $(verdict "$downtime" 0.10 le))"
echo "first copy / plain rsync -a throughput = $throughput (goal >= 0.90: $(verdict "$throughput" 0.90 ge))"
