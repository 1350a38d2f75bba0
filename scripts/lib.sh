# Shared by the scripts in scripts/: starting the local cluster when none is given, and stopping
# what was started.

: "${ROOT:?ROOT must be set}"
export PATH="$ROOT/bin:$PATH"
STARTED_CLUSTER=""

# cluster_up sets KUBECONFIG_PATH: CLUSTERSTORAGE_ACC_KUBECONFIG when set, else the local
# cluster, started when it is not running (and then stopped again by cluster_down_if_started).
cluster_up() {
	if [[ -n "${CLUSTERSTORAGE_ACC_KUBECONFIG:-}" ]]; then
		KUBECONFIG_PATH="$CLUSTERSTORAGE_ACC_KUBECONFIG"
		return
	fi
	if ! "$ROOT/tools/kube/cluster.sh" status >/dev/null 2>&1; then
		STARTED_CLUSTER=1
	fi
	KUBECONFIG_PATH="$("$ROOT/tools/kube/cluster.sh" up | tail -1)"
}

cluster_down_if_started() {
	if [[ -n "$STARTED_CLUSTER" ]]; then
		"$ROOT/tools/kube/cluster.sh" down
	fi
}

cleanup_work() {
	[[ -n "${1:-}" && -d "$1" ]] && rm -rf "$1"
}
