#!/usr/bin/env bash
# The acceptance suite under several CLIs at once, on one cluster (called by scripts/test.sh).
#
#   scripts/acc.sh CLI[*N]... [CLI!SKIP...] [CLI:REGEX...]
#
# A plain CLI runs every acceptance test; CLI*N does so with N workers that share the packages
# (each package runs once, by the first worker to start it: a claim under .acc/claims), so that
# packages of different lock groups run side by side under one CLI; CLI!SKIP every one but those
# SKIP matches (go test -skip: tests of CLI-independent machinery that another CLI runs). CLI:REGEX runs only the tests
# REGEX matches, in the packages that have one (the oldest supported Terraform runs a smoke subset
# this way).
# One worker per CLI runs the acceptance tests (TestAcc*) package by package, one package at a
# time, as `go test -p 1` would. The workers run side by side: most of the suite waits on the
# cluster (Helm waits, fio runtimes, k3s restarts), so two CLIs take little longer than one.
# Packages whose tests share cluster-wide names a test cannot choose are in one lock group and
# never run at once, under any CLI; see acc_group. A worker takes the first package of its order
# whose group is free, and each worker starts from a different end of the list, so the long
# packages overlap with short ones.
#
# Environment: TESTARGS (extra go test arguments), TF_ACC_* and KUBECONFIG as set by
# scripts/test.sh. Exits non-zero when any package failed under any CLI.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
TESTARGS="${TESTARGS:-}"
LOCKS="$ROOT/.acc/locks"
LOGS="$ROOT/.acc/logs"
# A worker that starts a package claims it here (mkdir, atomic): the other workers of its CLI*N
# then leave it.
CLAIMS="$ROOT/.acc/claims"
rm -rf "$CLAIMS"
mkdir -p "$LOCKS" "$LOGS" "$CLAIMS"

# acc_group PKG: the lock group of an acceptance package. "*" runs alone.
acc_group() {
	case "$1" in
	# OpenEBS's fixed class names (openebs-hostpath, mayastor-etcd-localpv), Longhorn's CRDs,
	# and which class is the cluster's default.
	backend | capacity | storageclass) echo backend ;;
	# Both run fio on the same node, one at a time, as they did as one package.
	benchmark | comparison) echo benchmark ;;
	# The migration restarts k3s on node 3, where any test's pods may run; the fault matrix
	# restarts the API server, stalls etcd and cuts node 1's SSH connections.
	k3smigration | faults) echo '*' ;;
	*) echo "$1" ;;
	esac
}

# The packages with acceptance tests: the backend group first (the longest, ~12 minutes per CLI
# in all), then the others longest first, k3smigration last (it waits for everything else). The
# first worker takes them in this order, the second from the other end, so that while one runs
# the backend group the other runs the rest. The fault matrix and k3smigration hold the cluster
# alone.
order=(backend capacity storageclass benchmark comparison localpv provider faults k3smigration)
found=()
while IFS= read -r dir; do
	found+=("$(basename "$dir")")
done < <(grep -l '^func TestAcc' internal/*/*_test.go | xargs -n1 dirname | sort -u)
packages=()
for p in "${order[@]}"; do
	for f in "${found[@]}"; do
		[[ $p == "$f" ]] && packages+=("$p")
	done
done
for f in "${found[@]}"; do
	[[ " ${order[*]} " == *" $f "* ]] || packages+=("$f")
done

# run_tests CLI REGEX PKG LOG: go test of PKG's tests that REGEX matches under CLI, its output
# shown and kept in LOG.
# ACC_SKIP, when set, names tests to skip.
run_tests() {
	local cli="$1" run="$2" pkg="$3" log="$4"
	# shellcheck disable=SC2086
	CGO_ENABLED=0 TF_ACC=1 TF_ACC_TERRAFORM_PATH="$ROOT/bin/$cli" \
		go test -trimpath -count=1 -timeout 60m -run "$run" ${ACC_SKIP:+-skip "$ACC_SKIP"} $TESTARGS "./internal/$pkg/" 2>&1 | tee "$log"
}

# try_package CLI REGEX PKG: runs PKG's acceptance tests that REGEX matches under CLI when its
# group is free; returns 75 (untouched) when it is not, 76 when another worker of CLI has taken
# PKG (ACC_SHARED set: a CLI*N worker), else go test's status. Every package holds
# the cluster lock shared; a "*" package holds it alone. The locks are closed for go test, so a
# process a test leaves behind cannot hold them.
#
# Tests that failed are run once more, alone (unless ACC_RETRY=0), when the package ran to its end
# (no panic, no timeout): a test that passes then is reported as flaky, here and in
# .acc/flaky.txt, which .ci/run prints last. One cluster serves two CLIs' tests and the demo at
# once, on two cores; a test that fails twice fails the run.
try_package() {
	local cli="$1" run="$2" pkg="$3" group mode=-s
	group="$(acc_group "$pkg")"
	if [[ $group == '*' ]]; then
		mode=-x
		group=cluster-alone
	fi
	(
		flock -n "$mode" 8 || exit 75
		flock -n 9 || exit 75
		if [[ -n ${ACC_SHARED:-} ]] && ! mkdir "$CLAIMS/$cli-$pkg" 2>/dev/null; then
			exit 76
		fi
		started=$SECONDS
		printf '==> %s\n' "$pkg"
		status=0
		log="$LOGS/$cli-$pkg.log"
		run_tests "$cli" "$run" "$pkg" "$log" 8>&- 9>&- || status=$?
		if [[ $status != 0 && ${ACC_RETRY:-1} != 0 ]] && ! grep -q '^panic: ' "$log"; then
			failed="$(sed -n 's/^--- FAIL: \(TestAcc[A-Za-z0-9_]*\) .*/\1/p' "$log" | sort -u | paste -sd '|')"
			if [[ -n $failed ]]; then
				printf '==> %s: running once more what failed: %s\n' "$pkg" "$failed"
				status=0
				run_tests "$cli" "^($failed)\$" "$pkg" "$log.retry" 8>&- 9>&- || status=$?
				if [[ $status == 0 ]]; then
					printf '%s %s: %s\n' "$cli" "$pkg" "$failed" >>"$ROOT/.acc/flaky.txt"
					printf '==> %s: FLAKY: %s failed, then passed alone\n' "$pkg" "$failed"
				fi
			fi
		fi
		printf '==> %s: %s in %ds\n' "$pkg" "$([[ $status == 0 ]] && echo passed || echo FAILED)" "$((SECONDS - started))"
		exit "$status"
	) 8>"$LOCKS/cluster" 9>"$LOCKS/group-$group"
}

# worker CLI REGEX PKG...: runs every PKG's tests that REGEX matches under CLI, in order as their
# groups come free.
worker() {
	local cli="$1" run="$2" failed=0 pkg status
	shift 2
	local todo=("$@")
	while ((${#todo[@]} > 0)); do
		local left=() ran=""
		for pkg in "${todo[@]}"; do
			if [[ -z $ran ]]; then
				status=0
				try_package "$cli" "$run" "$pkg" || status=$?
				if [[ $status == 76 ]]; then
					continue # another worker of this CLI ran it
				fi
				if [[ $status != 75 ]]; then
					ran=1
					[[ $status == 0 ]] || failed=1
					continue
				fi
			fi
			left+=("$pkg")
		done
		todo=("${left[@]+"${left[@]}"}")
		[[ -n $ran ]] || sleep 2
	done
	return "$failed"
}

# CLI*N: N workers of CLI sharing its packages.
specs=()
for spec in "$@"; do
	if [[ $spec =~ ^([^:!*]+)\*([0-9]+)(.*)$ ]]; then
		for ((n = 0; n < BASH_REMATCH[2]; n++)); do
			specs+=("${BASH_REMATCH[1]}${BASH_REMATCH[3]}@shared")
		done
	else
		specs+=("$spec")
	fi
done

pids=()
i=0
for spec in "${specs[@]}"; do
	shared=""
	if [[ $spec == *@shared ]]; then
		spec="${spec%@shared}" shared=1
	fi
	cli="${spec%%:*}" run='^TestAcc' skip=""
	mine=("${packages[@]}")
	if [[ $spec == *!* ]]; then
		cli="${spec%%!*}" skip="${spec#*!}"
	fi
	if [[ $spec == *:* ]]; then
		# Only the packages with a test the subset names (linking a test binary takes seconds).
		run="${spec#*:}" mine=()
		for p in "${packages[@]}"; do
			if grep -hoE '^func TestAcc[A-Za-z0-9_]+' "internal/$p"/*_test.go | cut -c6- | grep -E "$run" >/dev/null; then
				mine+=("$p")
			fi
		done
	else
		# Every other whole-suite CLI takes the packages from the other end.
		if ((i % 2 == 1)); then
			mine=()
			for ((j = ${#packages[@]} - 1; j >= 0; j--)); do
				mine+=("${packages[j]}")
			done
		fi
		i=$((i + 1))
	fi
	printf '==> acceptance tests under %s (%s): %s%s in %s\n' "$cli" "$("bin/$cli" version | head -1)" "$run" \
		"${skip:+ but $skip}" "${mine[*]}"
	ACC_SKIP="$skip" ACC_SHARED="$shared" worker "$cli" "$run" "${mine[@]}" 2>&1 | sed -u "s/^/[$cli${shared:+ $i}] /" &
	pids+=($!)
done

status=0
for pid in "${pids[@]}"; do
	wait "$pid" || status=1
done
if [[ -s $ROOT/.acc/flaky.txt ]]; then
	printf '==> flaky (failed, then passed alone):\n'
	cat "$ROOT/.acc/flaky.txt"
fi
clis=("${@%%:*}")
printf '==> acceptance tests under %s: %s in %ds\n' "${clis[*]%%!*}" "$([[ $status == 0 ]] && echo passed || echo FAILED)" "$SECONDS"
exit "$status"
