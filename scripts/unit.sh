#!/usr/bin/env bash
# The unit and integration tests (called by scripts/test.sh, beside the cluster and acceptance
# tests): every package's tests but the acceptance and cluster ones (go test skips those without
# TF_ACC), which includes the integration tests of the machinery packages (Helm against the
# cluster in KUBECONFIG, SSH against a real sshd, the k3s migration's stand-in machines); then
# internal/node under the race detector (the SSH machinery runs goroutines per session).
#
#   scripts/unit.sh
#
# They share two cores with a cluster that serves the acceptance tests of two CLIs, so a test
# that failed is run once more, alone, as scripts/acc.sh does with the acceptance tests, when its
# package ran to its end (no panic, no timeout, no build failure): one that passes then is
# reported in .acc/flaky.txt; one that fails twice fails the stage.
#
# Environment: TESTARGS (extra go test arguments), KUBECONFIG as set by scripts/test.sh.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
TESTARGS="${TESTARGS:-}"
ACC_DIR="$ROOT/.acc"
mkdir -p "$ACC_DIR"

# run_retrying NAME FLAG... -- PACKAGE...: go test with those flags of those packages; what failed
# is run once more with the same flags.
run_retrying() {
	local name="$1" log="$ACC_DIR/unit-$1.log" status=0 pkg tests retry_status flags=()
	shift
	while [[ $1 != -- ]]; do
		flags+=("$1")
		shift
	done
	shift
	go test "${flags[@]}" "$@" 2>&1 | tee "$log" || status=$?
	[[ $status != 0 ]] || return 0
	if [[ ${ACC_RETRY:-1} == 0 ]] || grep -q '^panic: ' "$log"; then
		return "$status"
	fi
	status=0
	# Per failed package, its failed top-level tests ("-" when none was named: it did not build).
	while read -r pkg tests; do
		if [[ $tests == - ]]; then
			status=1
			continue
		fi
		printf '==> %s: running once more what failed: %s\n' "$pkg" "$tests"
		retry_status=0
		go test "${flags[@]}" -run "^($tests)\$" "$pkg" 2>&1 | tee -a "$log.retry" || retry_status=$?
		if [[ $retry_status == 0 ]]; then
			printf '%s %s: %s\n' "$name" "$pkg" "$tests" >>"$ACC_DIR/flaky.txt"
			printf '==> %s: FLAKY: %s failed, then passed alone\n' "$pkg" "$tests"
		else
			status=1
		fi
	done < <(awk '
		/^--- FAIL: Test/ { tests = tests ? tests "|" $3 : $3; next }
		/^ok[ \t]/ { tests = ""; next }
		/^FAIL[ \t]+[^ \t]/ { print $2, (tests ? tests : "-"); tests = "" }
	' "$log")
	return "$status"
}

if [[ ${1:-} == --one ]]; then # scripts/unit.sh --one NAME FLAG... -- PACKAGE...: one run_retrying
	shift
	run_retrying "$@"
	exit
fi

status=0
# Every go test but the race detector's runs without cgo, as releases are built (GNUmakefile).
# The k3s migration's stand-in machines alone take 12-16 minutes on 2 cores.
mapfile -t local_pkgs < <(go list ./... | grep -v '/internal/helm$')
# shellcheck disable=SC2086
CGO_ENABLED=0 run_retrying unit -trimpath -count=1 -timeout 25m $TESTARGS -- "${local_pkgs[@]}" || status=1
# Helm's integration tests install charts on the cluster: they hold the cluster lock shared, as
# every acceptance package does (scripts/acc.sh), so that they never run while the k3s migration
# restarts node 3 (which holds it alone).
printf '==> internal/helm against the cluster (waits for the cluster lock)\n'
mkdir -p "$ACC_DIR/locks"
# shellcheck disable=SC2086
CGO_ENABLED=0 flock -s "$ACC_DIR/locks/cluster" \
	"$0" --one helm -trimpath -count=1 -timeout 25m $TESTARGS -- ./internal/helm || status=1
printf '==> internal/node under the race detector\n'
# shellcheck disable=SC2086
run_retrying race -trimpath -race -count=1 $TESTARGS -- ./internal/node/... || status=1
printf '==> unit and integration tests: %s in %ds\n' "$([[ $status == 0 ]] && echo passed || echo FAILED)" "$SECONDS"
exit "$status"
