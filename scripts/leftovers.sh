#!/usr/bin/env bash
# leftovers.sh snapshot FILE | compare FILE
#
# Proves the test suite leaves nothing behind on a cluster it shares with other work (the demo):
# `snapshot` records the cluster-scoped objects tests make (StorageClasses, PersistentVolumes,
# CRDs, namespaces, ClusterRoles and their bindings) and the Helm releases; `compare` fails,
# listing them, when objects exist that were not there at the snapshot. Used by .ci/run around
# `make test`; KUBECONFIG names the cluster (default: the local cluster's).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KUBECONFIG="${KUBECONFIG:-$ROOT/.cluster/kubeconfig}"
KINDS=(storageclasses persistentvolumes customresourcedefinitions namespaces clusterroles clusterrolebindings)

list() {
	local kind
	for kind in "${KINDS[@]}"; do
		"$ROOT/bin/kube" kubectl --kubeconfig "$KUBECONFIG" get "$kind" -o name
	done
	# Helm release records are Secrets of type helm.sh/release.v1 (one per revision).
	"$ROOT/bin/kube" kubectl --kubeconfig "$KUBECONFIG" get secrets --all-namespaces \
		--field-selector type=helm.sh/release.v1 -o 'jsonpath={range .items[*]}release/{.metadata.namespace}/{.metadata.labels.name}{"\n"}{end}'
}

case "${1:-}" in
snapshot)
	mkdir -p "$(dirname "$2")"
	list | sort -u >"$2"
	;;
compare)
	after=$(mktemp)
	trap 'rm -f "$after"' EXIT
	# Deletion is asynchronous (namespaces terminate, PVs are released): wait for it a while.
	deadline=$((SECONDS + ${LEFTOVERS_WAIT:-90}))
	while :; do
		list | sort -u >"$after"
		added=$(comm -13 "$2" "$after")
		[[ -z $added || $SECONDS -ge $deadline ]] && break
		sleep 2
	done
	if [[ -n $added ]]; then
		printf 'The tests left these objects behind on the cluster:\n%s\n' "$added" >&2
		exit 1
	fi
	echo "nothing left behind ($(wc -l <"$after") objects, as before the tests)"
	;;
*)
	echo "usage: $0 snapshot FILE | compare FILE" >&2
	exit 2
	;;
esac
