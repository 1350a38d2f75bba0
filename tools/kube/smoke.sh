#!/usr/bin/env bash
# smoke.sh: proves that the cluster from cluster.sh runs real storage work.
# A local PersistentVolume and a claim bound to it, a fio pod from
# the locally built image that writes into the volume; the pod must succeed,
# its log must be readable through the API server and the file must be on
# the node. Cleans up what it created. Run after `cluster.sh up`.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
eval "$("$HERE/cluster.sh" env)" # KUBECONFIG, CLUSTER_DIR, CLUSTERSTORAGE_NODE
BIN=${CLUSTER_BIN:-$(cd "$HERE/../.." && pwd)/bin}
VOLUME_DIR=$CLUSTER_DIR/volumes/smoke-local-pv

log() { printf 'smoke: %s\n' "$*" >&2; }
die() {
	log "FAIL: $*"
	exit 1
}
kubectl() { "$BIN/kube" kubectl "$@"; }

manifest() {
	sed -e "s|__NODE__|$CLUSTERSTORAGE_NODE|g" -e "s|__VOLUME_DIR__|$VOLUME_DIR|g" "$HERE/testdata/fio-local-pv.yaml"
}

# wait_phase KIND/NAME WANT TIMEOUT [FAIL_PHASE]: polls .status.phase.
wait_phase() {
	local obj=$1 want=$2 timeout=$3 fail=${4:-} phase=""
	local deadline=$((SECONDS + timeout))
	while ((SECONDS < deadline)); do
		phase=$(kubectl get "$obj" -o 'jsonpath={.status.phase}' 2>/dev/null || true)
		[[ $phase == "$want" ]] && return 0
		[[ -n $fail && $phase == "$fail" ]] && break
		sleep 0.2
	done
	kubectl describe "$obj" >&2 || true
	die "$obj is '$phase', wanted $want"
}

cleanup() {
	manifest | kubectl delete --ignore-not-found --wait=true -f - >/dev/null 2>&1 || true
	rm -rf "$VOLUME_DIR"
}
trap cleanup EXIT

start=$SECONDS
mkdir -p "$VOLUME_DIR"
[[ $(kubectl get node "$CLUSTERSTORAGE_NODE" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}') == True ]] ||
	die "node $CLUSTERSTORAGE_NODE is not Ready"
log "node $CLUSTERSTORAGE_NODE is Ready"
manifest | kubectl apply -f - >&2
wait_phase pvc/smoke-local-pvc Bound 30
log "claim bound to the local PV"
wait_phase pod/smoke-fio Succeeded 120 Failed
log "pod Succeeded"
logs=$(kubectl logs smoke-fio)
printf '%s\n' "$logs" | sed 's/^/  pod log: /' >&2
grep -q '^fio-3\.33$' <<<"$logs" || die "fio --version is not in the pod log"
[[ -s $VOLUME_DIR/smoke/hello.txt ]] || die "the pod's file is not in $VOLUME_DIR on the node"
log "file on the node: $(cat "$VOLUME_DIR/smoke/hello.txt")"
log "passed in $((SECONDS - start))s"
