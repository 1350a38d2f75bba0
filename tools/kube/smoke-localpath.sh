#!/usr/bin/env bash
# smoke-localpath.sh: proves dynamic provisioning on the cluster from
# cluster.sh with rancher/local-path-provisioner v0.0.30 running as a pod
# (testdata/local-path-provisioner.yaml): a claim on the local-path class and
# a pod that writes into it; the provisioner creates the PV through a helper
# pod, the file lands on the node, and deleting the claim deletes the PV and
# its directory. Cleans up what it created. Run after `cluster.sh up`.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
eval "$("$HERE/cluster.sh" env)" # KUBECONFIG, CLUSTER_DIR, CLUSTERSTORAGE_NODE
BIN=${CLUSTER_BIN:-$(cd "$HERE/../.." && pwd)/bin}
LOCAL_PATH_DIR=$CLUSTER_DIR/local-path-provisioner

log() { printf 'smoke-localpath: %s\n' "$*" >&2; }
die() {
	log "FAIL: $*"
	exit 1
}
kubectl() { "$BIN/kube" kubectl "$@"; }

provisioner() { sed "s|__LOCAL_PATH_DIR__|$LOCAL_PATH_DIR|g" "$HERE/testdata/local-path-provisioner.yaml"; }
claim() { sed "s|__NODE__|$CLUSTERSTORAGE_NODE|g" "$HERE/testdata/local-path-claim.yaml"; }

# poll DESCRIPTION TIMEOUT COMMAND...: until COMMAND succeeds, or fail.
poll() {
	local what=$1 timeout=$2
	shift 2
	local deadline=$((SECONDS + timeout))
	until "$@" >/dev/null 2>&1; do
		((SECONDS < deadline)) || die "timed out after ${timeout}s waiting for $what"
		sleep 0.2
	done
}

phase_is() { [[ $(kubectl get "$1" -o 'jsonpath={.status.phase}') == "$2" ]]; }
pod_done() {
	local p
	p=$(kubectl get pod smoke-dynamic -o 'jsonpath={.status.phase}')
	[[ $p == Succeeded ]] || { [[ $p == Failed ]] && die "pod smoke-dynamic Failed: $(kubectl logs smoke-dynamic 2>&1)"; }
}
gone() { ! kubectl get "$1" >/dev/null 2>&1; }

cleanup() {
	claim | kubectl delete --ignore-not-found --wait=true --timeout=60s -f - >/dev/null 2>&1 || true
	provisioner | kubectl delete --ignore-not-found --wait=true --timeout=60s -f - >/dev/null 2>&1 || true
}
trap cleanup EXIT

if kubectl get namespace local-path-storage >/dev/null 2>&1; then
	die "namespace local-path-storage exists: another local-path-provisioner runs here; not touching it"
fi
start=$SECONDS
mkdir -p "$LOCAL_PATH_DIR"
provisioner | kubectl apply -f - >&2
kubectl -n local-path-storage rollout status deployment/local-path-provisioner --timeout=60s >&2
log "provisioner running ($((SECONDS - start))s)"

claim | kubectl apply -f - >&2
poll "pod smoke-dynamic to succeed" 120 pod_done
pv=$(kubectl get pvc smoke-dynamic-pvc -o 'jsonpath={.spec.volumeName}')
[[ -n $pv ]] || die "claim smoke-dynamic-pvc is not bound"
path=$(kubectl get pv "$pv" -o 'jsonpath={.spec.hostPath.path}')
log "claim bound to $pv at $path ($((SECONDS - start))s)"
[[ $path == "$LOCAL_PATH_DIR"/* ]] || die "volume path $path is not below $LOCAL_PATH_DIR"
[[ $(cat "$path/hello.txt") == dynamic ]] || die "the pod's file is not in $path"
[[ $(kubectl logs smoke-dynamic) == dynamic ]] || die "unexpected pod log"

claim | kubectl delete --wait=true -f - >&2
poll "PV $pv to be deleted" 60 gone "pv/$pv"
poll "directory $path to be removed" 30 test ! -e "$path"
log "claim deleted: PV and directory removed by the provisioner"
log "passed in $((SECONDS - start))s"
