#!/usr/bin/env bash
# k3s-standin.sh: /usr/local/bin/k3s on a k3s-shaped test machine (cluster.sh, CLUSTER_K3S_NODES).
# Real k3s cannot be had here (the Go module proxy refuses github.com/k3s-io/k3s and its
# Kubernetes forks), so this does what real k3s does on a node that the provider's k3s data dir
# migration depends on, with real parts, and nothing more:
#   - the data dir from --data-dir, else from /etc/rancher/k3s/config.yaml and
#     config.yaml.d/*.yaml (the last one setting it wins), else /var/lib/rancher/k3s;
#   - bundled binaries in <data-dir>/data/<hash>/bin (here Debian's containerd, its runc shim,
#     runc and ctr, copied once), with absolute links data/current and data/previous;
#   - containerd started from data/current/bin with its root in <data-dir>/agent/containerd and
#     its STATE in /run/k3s/containerd (container rootfs mounts live there, not below the data
#     dir), its config rewritten on every start in <data-dir>/agent/etc/containerd/config.toml;
#   - a kubelet (real k3s runs it in-process; here the cluster's kubelet, registered with the
#     test cluster) with its root at /var/lib/kubelet, outside the data dir, and its kubeconfig
#     in <data-dir>/agent/kubelet.kubeconfig;
#   - containerd and the kubelet die with this process (as k3s's do: they are its children),
#     while containerd's shims and the containers keep running (they are in sessions of their
#     own), so `systemctl stop k3s` with KillMode=process leaves them, as on a real node;
#   - this process ends only once its children have: real k3s runs kine in its own process, so
#     no datastore writer outlives the unit's main process, and systemd (KillMode=process) calls
#     the unit stopped the moment that process exits. A child left to die of its parent-death
#     signal alone is still running then, which under load was long enough for a new k3s (a
#     second kine) to open the same sqlite database (issue 31). So on SIGTERM, SIGINT or any
#     exit the children are sent SIGTERM, newest first, and waited for (SIGKILL after
#     STOP_GRACE seconds); real k3s's containerd dies of its parent-death signal
#     (pkg/agent/containerd sets Pdeathsig), here it is waited for too, which only narrows what
#     a stop leaves running to the shims;
#   - for `server`, the datastore as k3s embeds it: kine (github.com/k3s-io/kine) with sqlite at
#     <data-dir>/server/db/state.db (WAL, k3s's default endpoint options), its etcd API on
#     <data-dir>/server/kine.sock, kept busy by kvwriter (a write every 200 ms, where real k3s's
#     API server writes leases and status), so the datastore changes while it is copied;
#   - READY=1 to systemd (k3s.service is Type=notify) once the kubelet answers.
# Not here: the API server and its controllers (the test cluster's control plane is elsewhere;
# kine serves only kvwriter), embedded etcd, flannel, the embedded registry, kube-proxy.
set -euo pipefail

STANDIN=/etc/rancher/k3s/standin
# The bundle's hash: fixed for this stand-in (real k3s uses the hash of its bundled binaries).
HASH=7f4f1e2d9c0b3a5e6d8c7b9a0f1e2d3c4b5a69788796a5b4c3d2e1f0a9b8c7d6

# How long the children get to end after SIGTERM before SIGKILL; below the unit's TimeoutStopSec
# (cluster.sh's drop-in), so systemd never kills this process while it waits for them.
STOP_GRACE=10

# children holds the PIDs of the processes started below, in the order they were started.
children=()
# stop_children ends every child: SIGTERM, newest first, then waits for each to be gone (reaped:
# a dead child has closed its files), SIGKILL for those still running after STOP_GRACE seconds.
# shellcheck disable=SC2317 # run by the EXIT trap
stop_children() {
	local i pid killer
	((${#children[@]})) || return 0
	for ((i = ${#children[@]} - 1; i >= 0; i--)); do
		kill -TERM "${children[i]}" 2>/dev/null || true
	done
	(
		sleep "$STOP_GRACE"
		kill -KILL "${children[@]}" 2>/dev/null
	) &
	killer=$!
	for ((i = ${#children[@]} - 1; i >= 0; i--)); do
		pid=${children[i]}
		wait "$pid" 2>/dev/null || true
	done
	kill "$killer" 2>/dev/null || true
	wait "$killer" 2>/dev/null || true
	children=()
}
trap stop_children EXIT
trap 'exit 0' TERM INT

data_dir=/var/lib/rancher/k3s
for f in /etc/rancher/k3s/config.yaml /etc/rancher/k3s/config.yaml.d/*.yaml; do
	[[ -f $f ]] || continue
	v=$(sed -n 's/^data-dir:[[:space:]]*"\{0,1\}\([^"]*\)"\{0,1\}[[:space:]]*$/\1/p' "$f" | tail -n1)
	if [[ -n $v ]]; then data_dir=$v; fi
done
cmd=${1:-server}
shift || true
while (($#)); do
	case $1 in
	--data-dir | -d)
		data_dir=$2
		shift 2
		;;
	--data-dir=*)
		data_dir=${1#*=}
		shift
		;;
	*) shift ;;
	esac
done
[[ $cmd == server || $cmd == agent ]] || {
	echo "k3s stand-in: only 'server' and 'agent' run here" >&2
	exit 1
}

bin=$data_dir/data/$HASH/bin
mkdir -p "$bin"
for b in /usr/bin/containerd /usr/bin/containerd-shim-runc-v2 /usr/sbin/runc /usr/bin/ctr; do
	[[ -e $bin/${b##*/} ]] || cp "$b" "$bin/"
done
current=$(readlink "$data_dir/data/current" 2>/dev/null || true)
if [[ $current != "$data_dir/data/$HASH" ]]; then
	if [[ -n $current ]]; then ln -sfn "$current" "$data_dir/data/previous"; fi
	ln -sfn "$data_dir/data/$HASH" "$data_dir/data/current"
fi

state=/run/k3s/containerd
sock=$state/containerd.sock
mkdir -p "$data_dir/agent/etc/containerd" "$data_dir/agent/etc/cni/net.d" "$state"
cp "$STANDIN/99-loopback.conf" "$data_dir/agent/etc/cni/net.d/"
sed -e "s|@ROOT@|$data_dir/agent/containerd|g" -e "s|@STATE@|$state|g" -e "s|@SOCK@|$sock|g" \
	-e "s|@CNI@|$data_dir/agent/etc/cni/net.d|g" "$STANDIN/containerd.toml.in" >"$data_dir/agent/etc/containerd/config.toml"
cp "$STANDIN/kubelet.kubeconfig" "$data_dir/agent/kubelet.kubeconfig"

export PATH=$data_dir/data/current/bin:$PATH
setpriv --pdeathsig KILL -- "$data_dir/data/current/bin/containerd" --config "$data_dir/agent/etc/containerd/config.toml" &
containerd_pid=$!
children+=("$containerd_pid")
deadline=$((SECONDS + 60))
until ctr --address "$sock" version >/dev/null 2>&1; do
	# As k3s does, fail at once when containerd cannot run (a binary that will not execute).
	kill -0 "$containerd_pid" 2>/dev/null || {
		echo "k3s stand-in: containerd exited" >&2
		exit 1
	}
	((SECONDS < deadline)) || exit 1
	sleep 0.2
done
for t in "$STANDIN"/images/*.tar; do
	ctr --address "$sock" -n k8s.io images import "$t" >/dev/null
done
if [[ $cmd == server ]]; then
	mkdir -p "$data_dir/server/db"
	rm -f "$data_dir/server/kine.sock"
	setpriv --pdeathsig KILL -- "$STANDIN/kine" --metrics-bind-address 0 \
		--endpoint "sqlite://$data_dir/server/db/state.db?_journal=WAL&cache=shared&_busy_timeout=30000&_txlock=immediate" \
		--listen-address "unix://$data_dir/server/kine.sock" &
	children+=("$!")
	until [[ -S $data_dir/server/kine.sock ]]; do
		((SECONDS < deadline)) || exit 1
		sleep 0.1
	done
	setpriv --pdeathsig KILL -- "$STANDIN/kvwriter" --every 200ms --endpoint "unix://$data_dir/server/kine.sock" &
	children+=("$!")
fi
# shellcheck disable=SC2046 # the flags file holds one flag per word
setpriv --pdeathsig KILL -- "$STANDIN/kube" kubelet --config="$STANDIN/kubelet-config.yaml" \
	--kubeconfig="$data_dir/agent/kubelet.kubeconfig" $(cat "$STANDIN/kubelet-flags") &
children+=("$!")
healthz=$(cat "$STANDIN/healthz")
until curl -fsS "$healthz" >/dev/null 2>&1; do
	((SECONDS < deadline + 60)) || exit 1
	sleep 0.2
done
systemd-notify --ready
# Exit (and let systemd restart us) when a child dies; the EXIT trap ends the others first.
wait -n || true
exit 1
