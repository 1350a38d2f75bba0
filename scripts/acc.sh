#!/usr/bin/env bash
# The acceptance suite under several CLIs at once, on one cluster (called by scripts/test.sh).
#
#   scripts/acc.sh CLI...
#
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
mkdir -p "$LOCKS"

# acc_group PKG: the lock group of an acceptance package. "*" runs alone.
acc_group() {
	case "$1" in
	# OpenEBS's fixed class names (openebs-hostpath, mayastor-etcd-localpv), Longhorn's CRDs,
	# and which class is the cluster's default.
	backend | capacity | storageclass) echo backend ;;
	# The migration restarts k3s on node 3, where any test's pods may run.
	k3smigration) echo '*' ;;
	*) echo "$1" ;;
	esac
}

# The packages with acceptance tests: the backend group first (the longest, ~12 minutes per CLI
# in all), then the others longest first, k3smigration last (it waits for everything else). The
# first worker takes them in this order, the second from the other end, so that while one runs
# the backend group the other runs the rest.
order=(backend capacity storageclass benchmark localpv provider k3smigration)
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

# try_package CLI PKG: runs PKG's acceptance tests under CLI when its group is free; returns 75
# (untouched) when it is not, else go test's status. Every package holds the cluster lock shared;
# a "*" package holds it alone. The locks are closed for go test, so a process a test leaves
# behind cannot hold them.
try_package() {
	local cli="$1" pkg="$2" group mode=-s
	group="$(acc_group "$pkg")"
	if [[ $group == '*' ]]; then
		mode=-x
		group=cluster-alone
	fi
	(
		flock -n "$mode" 8 || exit 75
		flock -n 9 || exit 75
		started=$SECONDS
		printf '==> %s\n' "$pkg"
		status=0
		# shellcheck disable=SC2086
		CGO_ENABLED=0 TF_ACC=1 TF_ACC_TERRAFORM_PATH="$ROOT/bin/$cli" \
			go test -trimpath -count=1 -timeout 60m -run '^TestAcc' $TESTARGS "./internal/$pkg/" 8>&- 9>&- || status=$?
		printf '==> %s: %s in %ds\n' "$pkg" "$([[ $status == 0 ]] && echo passed || echo FAILED)" "$((SECONDS - started))"
		exit "$status"
	) 8>"$LOCKS/cluster" 9>"$LOCKS/group-$group"
}

# worker CLI PKG...: runs every PKG under CLI, in order as their groups come free.
worker() {
	local cli="$1" failed=0 pkg status
	shift
	local todo=("$@")
	while ((${#todo[@]} > 0)); do
		local left=() ran=""
		for pkg in "${todo[@]}"; do
			if [[ -z $ran ]]; then
				status=0
				try_package "$cli" "$pkg" || status=$?
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

pids=()
i=0
for cli in "$@"; do
	printf '==> acceptance tests under %s (%s)\n' "$cli" "$("bin/$cli" version | head -1)"
	mine=("${packages[@]}")
	if ((i % 2 == 1)); then
		mine=()
		for ((j = ${#packages[@]} - 1; j >= 0; j--)); do
			mine+=("${packages[j]}")
		done
	fi
	worker "$cli" "${mine[@]}" 2>&1 | sed -u "s/^/[$cli] /" &
	pids+=($!)
	i=$((i + 1))
done

status=0
for pid in "${pids[@]}"; do
	wait "$pid" || status=1
done
printf '==> acceptance tests under %s: %s in %ds\n' "$*" "$([[ $status == 0 ]] && echo passed || echo FAILED)" "$SECONDS"
exit "$status"
