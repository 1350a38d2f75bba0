#!/usr/bin/env bash
# cluster.sh: a real Kubernetes cluster of one to N nodes on loopback addresses, built from the Go
# modules in tools/kube and Debian packages, for the project's tests and demo.
#
#   tools/kube/cluster.sh up      build what is missing, start everything, wait
#                                 for Ready nodes; prints the kubeconfig path
#   tools/kube/cluster.sh down    stop everything, unmount, delete the state dir
#   tools/kube/cluster.sh env     prints `export KUBECONFIG=...` and the node names
#   tools/kube/cluster.sh status  what runs, and the nodes' state
#
# The control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler) runs as plain
# processes on 127.0.0.1. Node 1 runs on this machine as today (kubelet and containerd as plain
# processes); nodes 2..N are machines with a real systemd (tools/kube/node.sh, systemd-nspawn),
# each with its own containerd, kubelet and sshd units, its own loopback address and disks. Every
# node registers with its own loopback address as InternalIP (127.0.0.1, 127.0.0.2, ...), which
# the API server uses to reach the kubelets: nothing on the host such as /etc/hosts is edited.
#
# Settings (environment; the defaults make the one shared cluster of a machine):
#   CLUSTER_NODES        number of nodes (default 3)
#   CLUSTER_HOST_NODE    1: node 1 runs on this machine (default); 0: every node is a machine,
#                        so a second cluster can run beside one that uses this machine's kubelet
#   CLUSTER_NODE_PREFIX  node i is named <prefix>-<i> (default clusterstorage-node)
#   CLUSTER_NODE_NAME    node 1's name (default <prefix>-1)
#   CLUSTER_NODE_NET     node i's address is <net>.<i> (default 127.0.0, so 127.0.0.1 ...)
#   CLUSTER_API_PORT, CLUSTER_ETCD_PORT, CLUSTER_ETCD_PEER_PORT, CLUSTER_KCM_PORT,
#   CLUSTER_SCHEDULER_PORT  control plane ports on 127.0.0.1 (6443, 23790, 23800, 10257, 10259)
#   CLUSTER_KUBELET_PORT, CLUSTER_KUBELET_HEALTHZ_PORT  on each node's address (10250, 10248)
#   CLUSTER_SSH_PORT     each node's sshd, on the node's address (default 2222)
#   CLUSTER_DATA_DISKS   extra disks of every machine node, name:size, loop-mounted ext4 at
#                        /mnt/disks/<name> inside it (default "data1:2G"; "" for none)
#   CLUSTER_K3S_NODES    machine nodes that are k3s-shaped (k3s.service, containerd from the k3s
#                        data dir, kine's sqlite datastore: k3s-standin.sh), e.g. "2 3"
#                        (default "3": the seed's clusters are k3s; "" for none)
#   CLUSTER_DIR, CLUSTER_BIN  state dir (default $ROOT/.cluster), binaries (default $ROOT/bin)
#
# Everything lives in one state directory, $CLUSTER_DIR: certificates, kubeconfigs, etcd data,
# containerd and kubelet state of node 1, logs (logs/<component>.log), pidfiles
# (run/<component>.pid), one directory per machine node (nodes/<name>: its disks, console log,
# machine.env), the SSH client key and known_hosts for the nodes (ssh/), and nodes.json, which
# tells tests every node's name, address, zone, SSH endpoint and disks.
#
# There is no pod network, no kube-proxy, no DNS and no registry: a MutatingAdmissionPolicy of
# this cluster (testdata/pod-network-policy.yaml, applied by every `up`) gives every new pod
# hostNetwork: true, KUBERNETES_SERVICE_HOST=127.0.0.1 and KUBERNETES_SERVICE_PORT=<API port> on
# each container that does not set them, and imagePullPolicy: Never for the images built here, so
# pods need none of that in their own spec. The images:
#   localhost/clusterstorage/pause:3.10   sandbox image
#   localhost/clusterstorage/fio:3.33     Debian's fio + busybox (sh, cat, ...)
#   localhost/clusterstorage/busybox:1    busybox-static
#   localhost/clusterstorage/rsync:3      Debian's rsync + busybox (volume migration copies)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BIN=${CLUSTER_BIN:-$ROOT/bin}
# shellcheck source=tools/bincache.sh
source "$ROOT/tools/bincache.sh"
# shellcheck source=tools/sshd-config.sh
source "$ROOT/tools/sshd-config.sh"
STATE=${CLUSTER_DIR:-$ROOT/.cluster}
NODE_COUNT=${CLUSTER_NODES:-3}
HOST_NODE=${CLUSTER_HOST_NODE:-1}
NODE_PREFIX=${CLUSTER_NODE_PREFIX:-clusterstorage-node}
NODE_NET=${CLUSTER_NODE_NET:-127.0.0}
DATA_DISKS=${CLUSTER_DATA_DISKS-data1:2G}
K3S_NODES=${CLUSTER_K3S_NODES-3}
KUBE_VERSION=v1.37.2

# Ports. etcd and the component ports are off their defaults so that an envtest or another etcd
# on this machine does not collide. The kubelet and sshd ports are on each node's own address.
APISERVER_PORT=${CLUSTER_API_PORT:-6443}
ETCD_PORT=${CLUSTER_ETCD_PORT:-23790}
ETCD_PEER_PORT=${CLUSTER_ETCD_PEER_PORT:-23800}
KCM_PORT=${CLUSTER_KCM_PORT:-10257}
SCHEDULER_PORT=${CLUSTER_SCHEDULER_PORT:-10259}
KUBELET_PORT=${CLUSTER_KUBELET_PORT:-10250}
KUBELET_HEALTHZ_PORT=${CLUSTER_KUBELET_HEALTHZ_PORT:-10248}
SSH_PORT=${CLUSTER_SSH_PORT:-2222}

[[ $NODE_COUNT =~ ^[1-9][0-9]?$ ]] || { echo "cluster: CLUSTER_NODES must be 1 to 99, not '$NODE_COUNT'" >&2; exit 2; }
[[ $HOST_NODE == 0 || $HOST_NODE == 1 ]] || { echo "cluster: CLUSTER_HOST_NODE must be 0 or 1" >&2; exit 2; }

# node_name I, node_address I, node_zone I: node I's name, loopback address and zone label.
node_name() {
	if (($1 == 1)) && [[ -n ${CLUSTER_NODE_NAME:-} ]]; then
		echo "$CLUSTER_NODE_NAME"
	else
		echo "$NODE_PREFIX-$1"
	fi
}
node_address() { echo "$NODE_NET.$1"; }
node_zone() {
	local zones=(a b c)
	echo "zone-${zones[($1 - 1) % 3]}"
}
# on_host I: node I runs on this machine rather than in a machine of its own.
on_host() { (($1 == 1 && HOST_NODE == 1)); }
NODE=$(node_name 1)
NODE_ADDRESS=$(node_address 1)

PKI=$STATE/pki
LOGS=$STATE/logs
RUN=$STATE/run
KUBECONFIG_PATH=$STATE/kubeconfig
CONTAINERD_SOCK=$STATE/containerd/containerd.sock

# Debian packages the cluster and its images need.
DEB_PACKAGES=(containerd runc containernetworking-plugins fio busybox-static openssl iproute2 curl util-linux mount
	openssh-server openssh-client e2fsprogs systemd-container attr rsync)

# Image references; cluster.sh builds and imports them, kubelet never pulls.
PAUSE_IMAGE=localhost/clusterstorage/pause:3.10
FIO_IMAGE=localhost/clusterstorage/fio:3.33
BUSYBOX_IMAGE=localhost/clusterstorage/busybox:1
RSYNC_IMAGE=localhost/clusterstorage/rsync:3
LOCALPATH_IMAGE=localhost/clusterstorage/local-path-provisioner:v0.0.30
declare -A IMAGES=([pause]=$PAUSE_IMAGE [busybox]=$BUSYBOX_IMAGE [fio]=$FIO_IMAGE [rsync]=$RSYNC_IMAGE [local-path-provisioner]=$LOCALPATH_IMAGE)


# Progress lines carry the seconds since this command started.
log() { printf 'cluster: [%3ds] %s\n' "$SECONDS" "$*" >&2; }
die() {
	log "ERROR: $*"
	exit 1
}

kubectl() { "$BIN/kube" kubectl --kubeconfig "$KUBECONFIG_PATH" "$@"; }
ctr_k8s() { ctr --address "$CONTAINERD_SOCK" --namespace k8s.io "$@"; }

# --- waiting ------------------------------------------------------------------

# wait_for DESCRIPTION TIMEOUT_SECONDS [COMPONENT] -- COMMAND...
# Polls COMMAND until it succeeds or the deadline passes. When COMPONENT is
# given and its process dies, fails at once and shows the end of its log.
wait_for() {
	local what=$1 timeout=$2 component=$3
	shift 4
	local deadline=$((SECONDS + timeout))
	until "$@" >/dev/null 2>&1; do
		if [[ -n $component ]] && ! is_running "$component"; then
			tail -n 30 "$LOGS/$component.log" >&2 || true
			die "$component exited while waiting for $what (log: $LOGS/$component.log)"
		fi
		if ((SECONDS >= deadline)); then
			[[ -n $component ]] && { tail -n 30 "$LOGS/$component.log" >&2 || true; }
			die "timed out after ${timeout}s waiting for $what"
		fi
		sleep 0.2
	done
}

# --- processes ----------------------------------------------------------------

pid_of() { cat "$RUN/$1.pid" 2>/dev/null || true; }

# is_running COMPONENT: its pidfile names a live process whose command line
# mentions our state dir (so a recycled pid is never taken for ours).
is_running() {
	local pid
	pid=$(pid_of "$1")
	[[ -n $pid && -r /proc/$pid/cmdline ]] || return 1
	local cmdline
	cmdline=$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline") || return 1
	[[ $cmdline == *"$STATE"* ]]
}

# start_daemon COMPONENT COMMAND...: runs COMMAND in its own session (so it
# outlives the calling shell and its process group) with output to
# logs/COMPONENT.log. The child writes its own pid before exec, so the
# pidfile names the daemon itself.
start_daemon() {
	local name=$1
	shift
	if is_running "$name"; then
		return 0
	fi
	log "starting $name"
	# shellcheck disable=SC2016 # $$, $0 and $@ are for the inner bash
	setsid bash -c 'echo $$ >"$0"; exec "$@"' "$RUN/$name.pid" "$@" \
		>>"$LOGS/$name.log" 2>&1 </dev/null 9<&- &
	# The pidfile appears as soon as the child runs.
	wait_for "$name pidfile" 10 "" -- test -s "$RUN/$name.pid"
}

# stop_daemons COMPONENT...: SIGTERM to each at once, then SIGKILL to those
# still alive after a deadline.
stop_daemons() {
	local name pid pids=()
	for name in "$@"; do
		if is_running "$name"; then
			pid=$(pid_of "$name")
			log "stopping $name (pid $pid)"
			kill -TERM "$pid" 2>/dev/null || true
			pids+=("$pid")
		fi
		rm -f "$RUN/$name.pid"
	done
	local deadline=$((SECONDS + 15)) alive
	while :; do
		alive=()
		for pid in "${pids[@]}"; do
			kill -0 "$pid" 2>/dev/null && alive+=("$pid")
		done
		((${#alive[@]} == 0)) && return 0
		if ((SECONDS >= deadline)); then
			log "pids ${alive[*]} did not exit on SIGTERM, killing them"
			kill -KILL "${alive[@]}" 2>/dev/null || true
		fi
		sleep 0.1
	done
}

# lock: up and down run one at a time on this machine (the ports are fixed),
# whoever calls them. The lock is on this script file, so no extra file is
# left behind; daemons are started with the descriptor closed.
lock() {
	exec 9<"${BASH_SOURCE[0]}"
	if ! flock -n 9; then
		log "waiting for another cluster.sh up/down to finish"
		flock 9
	fi
}

# --- host preparation ---------------------------------------------------------

ensure_packages() {
	local missing=() p
	for p in "${DEB_PACKAGES[@]}"; do
		[[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true) == "install ok installed" ]] || missing+=("$p")
	done
	((${#missing[@]} == 0)) && return 0
	log "installing Debian packages: ${missing[*]}"
	# Other users of this machine may hold the dpkg lock: wait for it.
	apt-get -o DPkg::Lock::Timeout=600 update -qq >&2
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >&2
}

# --- binaries -----------------------------------------------------------------

# go_build NAME MODULE_DIR PACKAGE [go build flags...]: builds $BIN/NAME unless
# a stamp of the module's sources, the Go version and the flags says it is
# current. The stamp keeps a warm `up` from hashing thousands of packages;
# when it differs, `go build` (with the Go build cache) decides what to redo.
go_build() {
	local name=$1 dir=$2 pkg=$3
	shift 3
	local stamp_file=$BIN/.$name.stamp stamp
	stamp=$(
		cd "$dir"
		{
			go version
			echo "CGO_ENABLED=${CGO_ENABLED:-} $*"
			find . -path ./etcd -prune -o -path ./localpath -prune -o -path ./kine -prune -o -path ./testdata -prune -o \
				\( -name '*.go' -o -name go.mod -o -name go.sum \) -type f -print | LC_ALL=C sort | xargs sha256sum
		} | sha256sum | cut -d' ' -f1
	)
	if [[ -x $BIN/$name && -f $stamp_file && $(cat "$stamp_file") == "$stamp" ]]; then
		return 0
	fi
	# The same build linked by another checkout on this machine (tools/bincache.sh).
	local key
	key=$(bincache_key "$name" "$pkg" "$stamp")
	if bincache_get "$name" "$key" "$BIN/$name"; then
		echo "$stamp" >"$stamp_file"
		log "$name: the build linked earlier on this machine ($BINCACHE)"
		return 0
	fi
	log "building $name (cold: minutes; warm Go cache: seconds)"
	local start=$SECONDS
	(cd "$dir" && go build -trimpath -buildvcs=false "$@" -o "$BIN/$name" "$pkg") >&2
	echo "$stamp" >"$stamp_file"
	bincache_put "$name" "$key" "$BIN/$name"
	log "built $name in $((SECONDS - start))s"
}

ensure_binaries() {
	mkdir -p "$BIN"
	local v=k8s.io/component-base/version
	go_build kube "$HERE" ./cmd/kube \
		-ldflags "-s -w -X $v.gitVersion=$KUBE_VERSION -X $v.gitMajor=1 -X $v.gitMinor=37 -X $v.gitTreeState=clean"
	go_build etcd "$HERE/etcd" . -ldflags "-s -w"
	CGO_ENABLED=0 go_build pause "$HERE" ./cmd/pause -ldflags "-s -w"
	go_build mkimage "$HERE" ./cmd/mkimage
	if [[ -f $HERE/localpath/go.mod ]]; then
		CGO_ENABLED=0 go_build local-path-provisioner "$HERE/localpath" github.com/rancher/local-path-provisioner -ldflags "-s -w -X main.VERSION=v0.0.30"
	fi
	# k3s's datastore for the k3s-shaped nodes: kine with sqlite (cgo, linked to Debian's
	# libsqlite3 rather than compiling sqlite), and the client that keeps it busy.
	CGO_ENABLED=1 go_build kine "$HERE/kine" github.com/k3s-io/kine -tags libsqlite3 -ldflags "-s -w"
	CGO_ENABLED=0 go_build kvwriter "$HERE/kine" ./kvwriter -ldflags "-s -w"
	local c
	for c in kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl; do
		ln -sfn kube "$BIN/$c"
	done
}

# --- certificates and kubeconfigs ------------------------------------------------

# new_ca NAME CN: a self-signed ECDSA P-256 certificate authority.
new_ca() {
	local name=$1 cn=$2
	[[ -f $PKI/$name.crt ]] && return 0
	openssl ecparam -name prime256v1 -genkey -noout -out "$PKI/$name.key" 2>/dev/null
	printf '[req]\ndistinguished_name=dn\n[dn]\n[ca]\nbasicConstraints=critical,CA:TRUE\nkeyUsage=critical,digitalSignature,keyCertSign,cRLSign\nsubjectKeyIdentifier=hash\n' >"$PKI/$name.cnf"
	openssl req -x509 -new -key "$PKI/$name.key" -subj "/CN=$cn" -days 3650 -sha256 \
		-config "$PKI/$name.cnf" -extensions ca -out "$PKI/$name.crt" 2>/dev/null
	rm -f "$PKI/$name.cnf"
}

# new_cert NAME SUBJECT EXT [CA]: an ECDSA P-256 key and a certificate signed by
# the cluster CA (or the CA named) with the given X.509 extensions (one per line).
new_cert() {
	local name=$1 subj=$2 ext=$3 ca=${4:-ca}
	[[ -f $PKI/$name.crt ]] && return 0
	openssl ecparam -name prime256v1 -genkey -noout -out "$PKI/$name.key" 2>/dev/null
	openssl req -new -key "$PKI/$name.key" -subj "$subj" -out "$PKI/$name.csr" 2>/dev/null
	printf '%s\n' "$ext" >"$PKI/$name.ext"
	openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/$ca.crt" -CAkey "$PKI/$ca.key" -CAcreateserial \
		-days 3650 -sha256 -extfile "$PKI/$name.ext" -out "$PKI/$name.crt" 2>/dev/null
	rm -f "$PKI/$name.csr" "$PKI/$name.ext"
}

client_ext() { printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth'; }
server_ext() { printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=%s' "$1"; }

ensure_pki() {
	mkdir -p "$PKI"
	chmod 700 "$PKI"
	[[ -f $PKI/ca.crt ]] || log "generating certificates"
	new_ca ca clusterstorage-ca
	# The aggregation layer's own CA and the client certificate the API server presents to
	# extension API servers (metrics-server), as kubeadm makes them.
	new_ca front-proxy-ca clusterstorage-front-proxy-ca
	new_cert front-proxy-client "/CN=front-proxy-client" "$(client_ext)" front-proxy-ca
	new_cert apiserver "/CN=kube-apiserver" "$(server_ext "DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1,IP:10.0.0.1")"
	new_cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "$(client_ext)"
	new_cert admin "/O=system:masters/CN=clusterstorage-admin" "$(client_ext)"
	new_cert controller-manager "/CN=system:kube-controller-manager" "$(client_ext)"
	new_cert scheduler "/CN=system:kube-scheduler" "$(client_ext)"
	local i name
	for ((i = 1; i <= NODE_COUNT; i++)); do
		name=$(node_name "$i")
		# The API server reaches each kubelet at the node's InternalIP, its loopback address.
		new_cert "kubelet-client-$name" "/O=system:nodes/CN=system:node:$name" "$(client_ext)"
		new_cert "kubelet-server-$name" "/CN=$name" "$(server_ext "DNS:$name,IP:$(node_address "$i")")"
	done
	if [[ ! -f $PKI/sa.key ]]; then
		openssl ecparam -name prime256v1 -genkey -noout -out "$PKI/sa.key" 2>/dev/null
		openssl ec -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null
	fi
}

# write_kubeconfig FILE CERT_NAME: a kubeconfig with the CA and the client
# certificate embedded, so it can be copied elsewhere and still work.
write_kubeconfig() {
	local file=$1 cert=$2
	[[ -f $file ]] && return 0
	cat >"$file.tmp" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: clusterstorage
  cluster:
    server: https://127.0.0.1:$APISERVER_PORT
    certificate-authority-data: $(base64 -w0 "$PKI/ca.crt")
users:
- name: $cert
  user:
    client-certificate-data: $(base64 -w0 "$PKI/$cert.crt")
    client-key-data: $(base64 -w0 "$PKI/$cert.key")
contexts:
- name: clusterstorage
  context:
    cluster: clusterstorage
    user: $cert
    namespace: default
current-context: clusterstorage
EOF
	chmod 600 "$file.tmp"
	mv "$file.tmp" "$file"
}

ensure_kubeconfigs() {
	write_kubeconfig "$KUBECONFIG_PATH" admin
	write_kubeconfig "$PKI/controller-manager.kubeconfig" controller-manager
	write_kubeconfig "$PKI/scheduler.kubeconfig" scheduler
	local i
	for ((i = 1; i <= NODE_COUNT; i++)); do
		write_kubeconfig "$PKI/kubelet-$(node_name "$i").kubeconfig" "kubelet-client-$(node_name "$i")"
	done
}

# ensure_ssh_keys: the client key that logs in as root on every node's sshd, and node 1's host
# key (the machines make their own).
ensure_ssh_keys() {
	mkdir -p "$STATE/ssh"
	chmod 700 "$STATE/ssh"
	[[ -f $STATE/ssh/id_ed25519 ]] || ssh-keygen -q -t ed25519 -N '' -C clusterstorage-nodes -f "$STATE/ssh/id_ed25519"
	if on_host 1 && [[ ! -f $STATE/ssh/host-$NODE ]]; then
		ssh-keygen -q -t ed25519 -N '' -C "$NODE" -f "$STATE/ssh/host-$NODE"
	fi
}

# --- configuration files ----------------------------------------------------------

# containerd_config ROOT STATE SOCKET RUNC_ROOT CNI_CONF_DIR: the containerd configuration of
# one node.
containerd_config() {
	local root=$1 state=$2 sock=$3 runc_root=$4 cni_conf=$5
	cat <<EOF
# Generated by tools/kube/cluster.sh.
version = 2
root = "$root"
state = "$state"
# opt would install into /opt/containerd, outside the state dir.
disabled_plugins = ["io.containerd.internal.v1.opt"]

[grpc]
  address = "$sock"

[ttrpc]
  address = "$sock.ttrpc"

[debug]
  address = ""

[metrics]
  address = ""

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  # REQUIRED here: these machines lack CAP_SYS_RESOURCE, and without it
  # every sandbox fails with "can't get final child's PID from pipe: EOF".
  restrict_oom_score_adj = true
  enable_selinux = false
  # Pod network namespaces (non-hostNetwork pods) stay in the state dir too.
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$runc_root"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$cni_conf"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = ""
EOF
}

# Only the loopback plugin: pods use the host network, but CRI reports the node's network Ready
# only once it has loaded a CNI config.
CNI_LOOPBACK='{"cniVersion": "0.3.1", "name": "lo", "type": "loopback"}'

# kubelet_config ADDRESS RUNTIME_SOCKET PKI_DIR NAME [EXTRA_YAML]: the kubelet configuration of
# node NAME listening on ADDRESS, with its certificates in PKI_DIR.
kubelet_config() {
	local address=$1 sock=$2 pki=$3 name=$4 extra=${5:-}
	cat <<EOF
# Generated by tools/kube/cluster.sh.
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $address
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: $address
healthzPort: $KUBELET_HEALTHZ_PORT
containerRuntimeEndpoint: unix://$sock
tlsCertFile: $pki/kubelet-server-$name.crt
tlsPrivateKeyFile: $pki/kubelet-server-$name.key
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: $pki/ca.crt
authorization:
  mode: Webhook
# The host has cgroup v1 (hybrid); the kubelet refuses it unless told.
failCgroupV1: false
cgroupDriver: cgroupfs
failSwapOn: false
# Images are imported, never pulled: never garbage-collect them.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
# A developer machine's disk and memory run fuller than a node's: evict only
# when really out.
evictionHard:
  memory.available: "50Mi"
  nodefs.available: "1%"
  nodefs.inodesFree: "1%"
  imagefs.available: "1%"
  imagefs.inodesFree: "1%"
resolvConf: /etc/resolv.conf
clusterDomain: cluster.local
maxPods: 110
serializeImagePulls: false
$extra
EOF
}

# kubelet_flags I: the flags node I's kubelet gets besides its config and kubeconfig.
# --cloud-provider=external: the kubelet refuses a loopback --node-ip ("nodeIP can't be loopback
# address") and would otherwise register the default route's address; with an external cloud
# provider it leaves the addresses to the cloud controller, which here is cluster.sh
# (init_node): it sets InternalIP to the node's loopback address and removes the
# node.cloudprovider.kubernetes.io/uninitialized taint, as a cloud-controller-manager does.
kubelet_flags() {
	local i=$1
	echo "--hostname-override=$(node_name "$i") --cloud-provider=external" \
		"--node-labels=topology.kubernetes.io/zone=$(node_zone "$i"),topology.kubernetes.io/region=local --v=1"
}

write_host_node_config() {
	mkdir -p "$STATE/containerd" "$STATE/cni/net.d" "$STATE/kubelet" "$STATE/kubelet-plugins" "$STATE/pod-logs"
	echo "$CNI_LOOPBACK" >"$STATE/cni/net.d/99-loopback.conf"
	containerd_config "$STATE/containerd/root" "$STATE/containerd/state" "$CONTAINERD_SOCK" "$STATE/runc" "$STATE/cni/net.d" \
		>"$STATE/containerd/config.toml"
	kubelet_config "$NODE_ADDRESS" "$CONTAINERD_SOCK" "$PKI" "$NODE" "podLogsDir: $STATE/pod-logs
volumePluginDir: $STATE/kubelet-plugins
cgroupRoot: /$NODE" >"$STATE/kubelet-config.yaml"
	# Node 1 stands for a node whose root shell starts quickly (sshd_config's SetEnv SHLVL=1).
	sshd_config "$NODE_ADDRESS:$SSH_PORT" none "$STATE/ssh/id_ed25519.pub" "$STATE/ssh/host-$NODE" >"$STATE/sshd_config"
}

# --- machine nodes --------------------------------------------------------------

# The machines see the binaries and images read-only at this path.
MACHINE_BIN=/opt/clusterstorage/bin

# is_k3s_node I: node I is k3s-shaped (CLUSTER_K3S_NODES lists it).
is_k3s_node() { [[ " $K3S_NODES " == *" $1 "* ]]; }

# write_machine I: node I's machine directory, nodes/<name>: machine.env for node.sh and the unit
# layout of a Kubernetes node (kube_layout) or of a k3s node (k3s_layout).
write_machine() {
	local i=$1 name address dir layout wait mask="" disk_dirs="/var/lib/containerd /var/lib/kubelet"
	name=$(node_name "$i")
	address=$(node_address "$i")
	dir=$STATE/nodes/$name
	layout=$dir/layout
	rm -rf "$layout"
	mkdir -p "$layout/etc/systemd/system/multi-user.target.wants"
	if is_k3s_node "$i"; then
		k3s_layout "$i" "$layout"
		wait="k3s.service"
		mask="containerd.service"
		# The data dir is a plain directory of the system disk, as on most k3s nodes (not a mount
		# point: the symlink method renames it).
		disk_dirs+=" /var/lib/rancher"
	else
		kube_layout "$i" "$layout"
		wait="containerd.service cluster-images.service kubelet.service"
	fi
	local disks=() d
	for d in $DATA_DISKS; do disks+=("$d"); done
	cat >"$dir/machine.env" <<EOF
# Generated by tools/kube/cluster.sh for tools/kube/node.sh.
MACHINE_NAME=$name
MACHINE_ADDRESS=$address
MACHINE_SSH_PORT=$SSH_PORT
MACHINE_AUTHORIZED_KEYS=$STATE/ssh/id_ed25519.pub
MACHINE_LAYOUT=$layout
MACHINE_WAIT_UNITS=($wait)
MACHINE_MASK=($mask)
MACHINE_DISK_DIRS=($disk_dirs)
MACHINE_BINDS_RO=($BIN:$MACHINE_BIN)
MACHINE_DATA_DISKS=(${disks[*]})
EOF
}

# kube_layout I LAYOUT: a kubeadm-style node: Debian's containerd.service with our config, a
# kubelet unit, and a oneshot unit importing the images before the kubelet starts.
kube_layout() {
	local i=$1 layout=$2 name address
	name=$(node_name "$i")
	address=$(node_address "$i")
	mkdir -p "$layout/etc/containerd" "$layout/etc/cni/net.d" "$layout/etc/kubernetes/pki"
	echo "$CNI_LOOPBACK" >"$layout/etc/cni/net.d/99-loopback.conf"
	containerd_config /var/lib/containerd /run/containerd /run/containerd/containerd.sock /run/containerd/runc /etc/cni/net.d \
		>"$layout/etc/containerd/config.toml"
	cp "$PKI/ca.crt" "$PKI/kubelet-server-$name.crt" "$PKI/kubelet-server-$name.key" "$layout/etc/kubernetes/pki/"
	cp "$PKI/kubelet-$name.kubeconfig" "$layout/etc/kubernetes/kubelet.kubeconfig"
	kubelet_config "$address" /run/containerd/containerd.sock /etc/kubernetes/pki "$name" >"$layout/etc/kubernetes/kubelet-config.yaml"
	cat >"$layout/etc/systemd/system/kubelet.service" <<EOF
# Generated by tools/kube/cluster.sh.
[Unit]
Description=kubelet: the Kubernetes node agent
After=containerd.service cluster-images.service
Wants=containerd.service cluster-images.service

[Service]
ExecStart=$MACHINE_BIN/kube kubelet --config=/etc/kubernetes/kubelet-config.yaml --kubeconfig=/etc/kubernetes/kubelet.kubeconfig $(kubelet_flags "$i")
Restart=always
RestartSec=1
KillMode=process
Delegate=yes

[Install]
WantedBy=multi-user.target
EOF
	cat >"$layout/etc/systemd/system/cluster-images.service" <<EOF
# Generated by tools/kube/cluster.sh: images are imported, never pulled.
[Unit]
Description=Import the cluster's images into containerd
After=containerd.service
Requires=containerd.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/sh -c 'for t in $MACHINE_BIN/images/*.tar; do ctr -n k8s.io images import "\$\$t" >/dev/null || exit 1; done'
EOF
	ln -sfn /etc/systemd/system/kubelet.service "$layout/etc/systemd/system/multi-user.target.wants/kubelet.service"
	ln -sfn /lib/systemd/system/containerd.service "$layout/etc/systemd/system/multi-user.target.wants/containerd.service"
}

# k3s_layout I LAYOUT: a k3s server node as k3s's install script leaves it: k3s.service with the
# script's directives, its env file, /etc/rancher/k3s/config.yaml, and /usr/local/bin/k3s, which
# here is k3s-standin.sh (containerd from <data-dir>/data/<hash>/bin, the kubelet; see there), and
# /usr/local/bin/k3s-killall.sh (k3s-killall.sh: ours, doing what the installed one does).
# Debian's containerd.service is masked: the node's only containerd is k3s's.
k3s_layout() {
	local i=$1 layout=$2 name address standin
	name=$(node_name "$i")
	address=$(node_address "$i")
	standin=$layout/etc/rancher/k3s/standin
	mkdir -p "$standin/pki" "$layout/usr/local/bin"
	install -m 755 "$HERE/k3s-standin.sh" "$layout/usr/local/bin/k3s"
	install -m 755 "$HERE/k3s-killall.sh" "$layout/usr/local/bin/k3s-killall.sh"
	install -m 755 "$HERE/k3s-killall-old.sh" "$standin/k3s-killall-old.sh"
	printf '# Generated by tools/kube/cluster.sh.\nnode-name: %s\nnode-ip: %s\n' "$name" "$address" >"$layout/etc/rancher/k3s/config.yaml"
	: >"$layout/etc/systemd/system/k3s.service.env"
	echo "$CNI_LOOPBACK" >"$standin/99-loopback.conf"
	# @ROOT@, @STATE@, @SOCK@, @CNI@: filled in by the stand-in from the data dir on every start.
	containerd_config @ROOT@ @STATE@ @SOCK@ @STATE@/runc @CNI@ >"$standin/containerd.toml.in"
	cp "$PKI/ca.crt" "$PKI/kubelet-server-$name.crt" "$PKI/kubelet-server-$name.key" "$standin/pki/"
	cp "$PKI/kubelet-$name.kubeconfig" "$standin/kubelet.kubeconfig"
	kubelet_config "$address" /run/k3s/containerd/containerd.sock /etc/rancher/k3s/standin/pki "$name" >"$standin/kubelet-config.yaml"
	kubelet_flags "$i" >"$standin/kubelet-flags"
	echo "http://$address:$KUBELET_HEALTHZ_PORT/healthz" >"$standin/healthz"
	ln -sfn "$MACHINE_BIN/kube" "$standin/kube"
	ln -sfn "$MACHINE_BIN/images" "$standin/images"
	ln -sfn "$MACHINE_BIN/kine" "$standin/kine"
	ln -sfn "$MACHINE_BIN/kvwriter" "$standin/kvwriter"
	cat >"$layout/etc/systemd/system/k3s.service" <<'EOF'
# Generated by tools/kube/cluster.sh with the directives k3s's install.sh writes for a server.
[Unit]
Description=Lightweight Kubernetes
Documentation=https://k3s.io
Wants=network-online.target
After=network-online.target
Conflicts=k3s-agent.service

[Install]
WantedBy=multi-user.target

[Service]
Type=notify
EnvironmentFile=-/etc/default/%N
EnvironmentFile=-/etc/sysconfig/%N
EnvironmentFile=-/etc/systemd/system/k3s.service.env
KillMode=process
Delegate=yes
LimitNOFILE=1048576
LimitNPROC=infinity
LimitCORE=infinity
TasksMax=infinity
TimeoutStartSec=0
Restart=always
RestartSec=5s
ExecStartPre=-/sbin/modprobe br_netfilter
ExecStartPre=-/sbin/modprobe overlay
ExecStart=/usr/local/bin/k3s server
EOF
	# The stand-in is a script: its READY=1 comes from systemd-notify, a child process, which
	# systemd only accepts with NotifyAccess=all (real k3s notifies from its main process). It
	# waits for its children when stopped (k3s-standin.sh, STOP_GRACE): the unit's stop timeout
	# is set above that wait, where the node's DefaultTimeoutStopSec=5s would kill it sooner (real
	# k3s's unit inherits systemd's default, 90 s).
	mkdir -p "$layout/etc/systemd/system/k3s.service.d"
	printf '# Generated by tools/kube/cluster.sh: for the k3s stand-in only.\n[Service]\nNotifyAccess=all\nTimeoutStopSec=30s\n' \
		>"$layout/etc/systemd/system/k3s.service.d/standin.conf"
	ln -sfn /etc/systemd/system/k3s.service "$layout/etc/systemd/system/multi-user.target.wants/k3s.service"
}

# --- images -------------------------------------------------------------------

# busybox_tree DIR: busybox-static as /bin/busybox with a symlink per applet.
busybox_tree() {
	local dir=$1 applet
	mkdir -p "$dir/bin" "$dir/tmp" "$dir/etc"
	chmod 1777 "$dir/tmp"
	cp /bin/busybox "$dir/bin/busybox"
	for applet in $(/bin/busybox --list); do
		[[ -e $dir/bin/$applet ]] || ln -s busybox "$dir/bin/$applet"
	done
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$dir/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$dir/etc/group"
}

# copy_with_libs DIR BINARY: BINARY and every library ldd lists, at the same
# paths, dereferenced.
copy_with_libs() {
	local dir=$1 binary=$2 lib
	mkdir -p "$dir$(dirname "$binary")"
	cp -L "$binary" "$dir$binary"
	for lib in $(ldd "$binary" | grep -o '/[^ ]*'); do
		mkdir -p "$dir$(dirname "$lib")"
		cp -L "$lib" "$dir$lib"
	done
}

# build_image NAME TAG INPUTS -- MKIMAGE_FLAGS: builds $BIN/images/NAME.tar
# from a root file system made by populate_NAME unless it is newer than
# every input file.
build_image() {
	local name=$1 tag=$2
	shift 2
	local inputs=() newer=0 f
	while [[ $1 != -- ]]; do
		inputs+=("$1")
		shift
	done
	shift
	local tar=$BIN/images/$name.tar
	if [[ -f $tar ]]; then
		for f in "${inputs[@]}" "$BIN/mkimage" "${BASH_SOURCE[0]}"; do
			[[ $f -nt $tar ]] && newer=1
		done
		((newer == 0)) && return 0
	fi
	log "building image $tag"
	local rootfs
	rootfs=$(mktemp -d "$BIN/images/.rootfs-$name.XXXXXX")
	"populate_$name" "$rootfs"
	"$BIN/mkimage" -rootfs "$rootfs" -tag "$tag" -o "$tar" "$@"
	rm -rf "$rootfs"
}

populate_pause() { cp "$BIN/pause" "$1/pause"; }
populate_busybox() { busybox_tree "$1"; }
populate_fio() {
	busybox_tree "$1"
	copy_with_libs "$1" /usr/bin/fio
}
populate_rsync() {
	busybox_tree "$1"
	copy_with_libs "$1" /usr/bin/rsync
}
populate_local-path-provisioner() {
	busybox_tree "$1" # the provisioner's helper pods run `sh` scripts
	mkdir -p "$1/usr/bin"
	cp "$BIN/local-path-provisioner" "$1/usr/bin/local-path-provisioner"
}

ensure_images() {
	mkdir -p "$BIN/images"
	# Leftovers of an interrupted build (we hold the lock, so none is running).
	rm -rf "$BIN"/images/.rootfs-* "$BIN"/images/.layer-* "$BIN"/images/*.tar.tmp
	build_image pause "$PAUSE_IMAGE" "$BIN/pause" -- -entrypoint /pause
	build_image busybox "$BUSYBOX_IMAGE" /bin/busybox -- -cmd sh
	build_image fio "$FIO_IMAGE" /bin/busybox /usr/bin/fio -- -cmd fio,--version
	build_image rsync "$RSYNC_IMAGE" /bin/busybox /usr/bin/rsync -- -cmd rsync,--version
	if [[ -x $BIN/local-path-provisioner ]]; then
		build_image local-path-provisioner "$LOCALPATH_IMAGE" "$BIN/local-path-provisioner" -- -entrypoint local-path-provisioner
	fi
}

# import_images: imports each built image that containerd lacks, or that
# was rebuilt since it was imported.
import_images() {
	local have name tar stamp
	have=$(ctr_k8s images ls -q 2>/dev/null || true)
	for name in "${!IMAGES[@]}"; do
		tar=$BIN/images/$name.tar
		stamp=$STATE/containerd/imported-$name
		[[ -f $tar ]] || continue
		if grep -qxF "${IMAGES[$name]}" <<<"$have" && [[ -f $stamp && ! $tar -nt $stamp ]]; then
			continue
		fi
		log "importing ${IMAGES[$name]}"
		ctr_k8s images import "$tar" >/dev/null
		touch "$stamp"
	done
}

# --- components ---------------------------------------------------------------

start_etcd() {
	mkdir -p "$STATE/etcd"
	# --unsafe-no-fsync: a throwaway test cluster; fsync only slows tests.
	start_daemon etcd "$BIN/etcd" \
		--name=clusterstorage \
		--data-dir="$STATE/etcd" \
		--listen-client-urls="http://127.0.0.1:$ETCD_PORT" \
		--advertise-client-urls="http://127.0.0.1:$ETCD_PORT" \
		--listen-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
		--initial-advertise-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
		--initial-cluster="clusterstorage=http://127.0.0.1:$ETCD_PEER_PORT" \
		--listen-metrics-urls= \
		--unsafe-no-fsync \
		--log-level=warn
	wait_for "etcd health" 60 etcd -- curl -fsS "http://127.0.0.1:$ETCD_PORT/health"
}

start_apiserver() {
	start_daemon kube-apiserver "$BIN/kube-apiserver" \
		--advertise-address=127.0.0.1 \
		--bind-address=127.0.0.1 \
		--secure-port="$APISERVER_PORT" \
		--etcd-servers="http://127.0.0.1:$ETCD_PORT" \
		--endpoint-reconciler-type=none \
		--service-cluster-ip-range=10.0.0.0/24 \
		--client-ca-file="$PKI/ca.crt" \
		--tls-cert-file="$PKI/apiserver.crt" \
		--tls-private-key-file="$PKI/apiserver.key" \
		--kubelet-client-certificate="$PKI/apiserver-kubelet-client.crt" \
		--kubelet-client-key="$PKI/apiserver-kubelet-client.key" \
		--kubelet-certificate-authority="$PKI/ca.crt" \
		--kubelet-preferred-address-types=InternalIP \
		--requestheader-client-ca-file="$PKI/front-proxy-ca.crt" \
		--requestheader-allowed-names=front-proxy-client \
		--requestheader-username-headers=X-Remote-User \
		--requestheader-group-headers=X-Remote-Group \
		--requestheader-extra-headers-prefix=X-Remote-Extra- \
		--proxy-client-cert-file="$PKI/front-proxy-client.crt" \
		--proxy-client-key-file="$PKI/front-proxy-client.key" \
		--service-account-issuer=https://kubernetes.default.svc.cluster.local \
		--service-account-key-file="$PKI/sa.pub" \
		--service-account-signing-key-file="$PKI/sa.key" \
		--authorization-mode=Node,RBAC \
		--allow-privileged=true \
		--enable-admission-plugins=NodeRestriction \
		--profiling=false
	wait_for "kube-apiserver /readyz" 120 kube-apiserver -- kubectl get --raw=/readyz
}

start_controller_manager() {
	start_daemon kube-controller-manager "$BIN/kube-controller-manager" \
		--kubeconfig="$PKI/controller-manager.kubeconfig" \
		--authentication-kubeconfig="$PKI/controller-manager.kubeconfig" \
		--authorization-kubeconfig="$PKI/controller-manager.kubeconfig" \
		--bind-address=127.0.0.1 \
		--secure-port="$KCM_PORT" \
		--cert-dir="$PKI/controller-manager-generated" \
		--leader-elect=false \
		--use-service-account-credentials=true \
		--service-account-private-key-file="$PKI/sa.key" \
		--root-ca-file="$PKI/ca.crt" \
		--cluster-signing-cert-file="$PKI/ca.crt" \
		--cluster-signing-key-file="$PKI/ca.key" \
		--pvclaimbinder-sync-period=5s \
		--flex-volume-plugin-dir="$STATE/kubelet-plugins" \
		--profiling=false
}

wait_controller_manager() {
	wait_for "kube-controller-manager /healthz" 60 kube-controller-manager -- \
		curl -fsSk "https://127.0.0.1:$KCM_PORT/healthz"
}

start_scheduler() {
	start_daemon kube-scheduler "$BIN/kube-scheduler" \
		--kubeconfig="$PKI/scheduler.kubeconfig" \
		--authentication-kubeconfig="$PKI/scheduler.kubeconfig" \
		--authorization-kubeconfig="$PKI/scheduler.kubeconfig" \
		--bind-address=127.0.0.1 \
		--secure-port="$SCHEDULER_PORT" \
		--cert-dir="$PKI/scheduler-generated" \
		--leader-elect=false \
		--profiling=false
}

wait_scheduler() {
	wait_for "kube-scheduler /healthz" 60 kube-scheduler -- \
		curl -fsSk "https://127.0.0.1:$SCHEDULER_PORT/healthz"
}

start_containerd() {
	start_daemon containerd containerd --config "$STATE/containerd/config.toml"
	wait_for "containerd" 60 containerd -- ctr --address "$CONTAINERD_SOCK" version
}

start_kubelet() {
	# The kubelet's cgroup root of its own (its pods go below /<node>/kubepods), as on the
	# machines, so that another kubelet on this machine never takes its pods for orphans.
	"$HERE/node.sh" cgroups-make "$NODE"
	# shellcheck disable=SC2046 # kubelet_flags is a list of flags
	start_daemon kubelet "$BIN/kubelet" \
		--config="$STATE/kubelet-config.yaml" \
		--kubeconfig="$PKI/kubelet-$NODE.kubeconfig" \
		--root-dir="$STATE/kubelet" \
		--cert-dir="$PKI/kubelet-generated" \
		$(kubelet_flags 1)
}

wait_kubelet() {
	wait_for "kubelet /healthz" 60 kubelet -- curl -fsS "http://$NODE_ADDRESS:$KUBELET_HEALTHZ_PORT/healthz"
}

# start_sshd: node 1's own sshd on its address, so that every node has one the same way.
start_sshd() {
	mkdir -p /run/sshd # its privilege separation directory; systemd-tmpfiles makes it at boot
	start_daemon sshd /usr/sbin/sshd -D -e -f "$STATE/sshd_config"
}

# start_machines: boots the machine nodes at once (node.sh up waits for each one's kubelet unit).
start_machines() {
	local i pids=() name rc=0
	for ((i = 1; i <= NODE_COUNT; i++)); do
		on_host "$i" && continue
		name=$(node_name "$i")
		write_machine "$i"
		"$HERE/node.sh" up "$STATE/nodes/$name" >>"$LOGS/node-$name.log" 2>&1 9<&- &
		pids+=("$!:$name")
	done
	local p
	for p in "${pids[@]}"; do
		if ! wait "${p%%:*}"; then
			tail -n 20 "$LOGS/node-${p#*:}.log" >&2 || true
			log "ERROR: machine ${p#*:} did not come up (log: $LOGS/node-${p#*:}.log)"
			rc=1
		fi
	done
	return $rc
}

# init_node I: what a cloud-controller-manager does for a new node: set its addresses (InternalIP:
# the node's loopback address, Hostname: its name) and remove the uninitialized taint the kubelet
# registered it with (--cloud-provider=external). Idempotent.
init_node() {
	local i=$1 name address
	name=$(node_name "$i")
	address=$(node_address "$i")
	wait_for "node $name to register" 120 "" -- kubectl get node "$name"
	if [[ $(kubectl get node "$name" -o 'jsonpath={.status.addresses[?(@.type=="InternalIP")].address}') != "$address" ]]; then
		kubectl patch node "$name" --subresource=status --type=merge \
			-p "{\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"$address\"},{\"type\":\"Hostname\",\"address\":\"$name\"}]}}" >/dev/null
	fi
	if kubectl get node "$name" -o 'jsonpath={.spec.taints[*].key}' | grep -qw node.cloudprovider.kubernetes.io/uninitialized; then
		kubectl taint node "$name" node.cloudprovider.kubernetes.io/uninitialized- >/dev/null
	fi
}

node_ready() {
	[[ $(kubectl get node "$1" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}') == True ]]
}

all_nodes_ready() {
	local i
	for ((i = 1; i <= NODE_COUNT; i++)); do
		node_ready "$(node_name "$i")" || return 1
	done
}

# host_components: the processes that run on this machine.
host_components() {
	echo etcd kube-apiserver kube-controller-manager kube-scheduler
	if on_host 1; then echo containerd kubelet sshd; fi
}

all_running() {
	local c name i
	for c in $(host_components); do
		is_running "$c" || return 1
	done
	for ((i = 1; i <= NODE_COUNT; i++)); do
		on_host "$i" && continue
		name=$(node_name "$i")
		[[ -f $STATE/nodes/$name/machine.env ]] || return 1
		"$HERE/node.sh" status "$STATE/nodes/$name" >/dev/null 2>&1 || return 1
	done
}

# write_nodes_json: what tests need to know about the nodes (internal/acctest reads it): names,
# addresses, zones, SSH endpoints with the client key and known_hosts, data disks, and for
# machines the directory node.sh takes (to power one off and on again).
write_nodes_json() {
	local i name address known=$STATE/ssh/known_hosts sep="" d disks k3s
	: >"$known.tmp"
	{
		printf '{\n  "ssh_user": "root",\n  "ssh_private_key": "%s",\n  "ssh_known_hosts": "%s",\n  "node_tool": "%s",\n  "machine_bin": "%s",\n  "nodes": [' \
			"$STATE/ssh/id_ed25519" "$known" "$HERE/node.sh" "$MACHINE_BIN"
		for ((i = 1; i <= NODE_COUNT; i++)); do
			name=$(node_name "$i")
			address=$(node_address "$i")
			disks=""
			if on_host "$i"; then
				printf '[%s]:%s %s\n' "$address" "$SSH_PORT" "$(cut -d' ' -f1,2 "$STATE/ssh/host-$name.pub")" >>"$known.tmp"
				printf '%s\n    {"name": "%s", "address": "%s", "zone": "%s", "ssh_host": "%s", "ssh_port": %s, "machine_dir": "", "data_disks": []}' \
					"$sep" "$name" "$address" "$(node_zone "$i")" "$address" "$SSH_PORT"
			else
				printf '[%s]:%s %s\n' "$address" "$SSH_PORT" "$(cut -d' ' -f1,2 "$STATE/nodes/$name/ssh/ssh_host_ed25519_key.pub")" >>"$known.tmp"
				for d in $DATA_DISKS; do disks+="${disks:+, }\"/mnt/disks/${d%%:*}\""; done
				k3s=false
				if is_k3s_node "$i"; then k3s=true; fi
				printf '%s\n    {"name": "%s", "address": "%s", "zone": "%s", "ssh_host": "%s", "ssh_port": %s, "machine_dir": "%s", "data_disks": [%s], "k3s": %s}' \
					"$sep" "$name" "$address" "$(node_zone "$i")" "$address" "$SSH_PORT" "$STATE/nodes/$name" "$disks" "$k3s"
			fi
			sep=,
		done
		printf '\n  ]\n}\n'
	} >"$STATE/nodes.json.tmp"
	mv "$known.tmp" "$known"
	mv "$STATE/nodes.json.tmp" "$STATE/nodes.json"
}

# check_ssh I: node I's sshd runs a command within seconds, as the provider and the tests need
# (a login shell that waits on something, as a stale lock, timed out every test that used the node).
check_ssh() {
	local address started=$SECONDS
	address=$(node_address "$1")
	if ! timeout 20 ssh -F /dev/null -o BatchMode=yes -o StrictHostKeyChecking=yes -o UserKnownHostsFile="$STATE/ssh/known_hosts" \
		-i "$STATE/ssh/id_ed25519" -p "$SSH_PORT" "root@$address" true </dev/null; then
		die "node $(node_name "$1")'s sshd ($address:$SSH_PORT) did not run a command within 20 s (its log: $LOGS/sshd.log for node 1, the machine's journal otherwise)"
	fi
	((SECONDS - started < 5)) || log "node $(node_name "$1")'s sshd took $((SECONDS - started))s to run a command"
}

# --- the pod policy --------------------------------------------------------------

# The test cluster's stand-in for a pod network (README.md, "Pods and the pod network"): a
# MutatingAdmissionPolicy that gives every new pod hostNetwork: true, KUBERNETES_SERVICE_HOST/PORT
# of the API server and imagePullPolicy: Never for the images built here, so that pods run as
# their creators wrote them (the provider's with its default host_network = false). Part of this
# cluster, never of the provider.
POD_POLICY=$HERE/testdata/pod-network-policy.yaml

# pod_policy_probe: a new pod, created as a server-side dry run (nothing is stored), comes back
# with the policy's fields.
pod_policy_probe() {
	local got
	got=$(kubectl -n default create --dry-run=server -f - \
		-o 'jsonpath={.spec.hostNetwork} {.spec.containers[0].imagePullPolicy} {.spec.containers[0].env[?(@.name=="KUBERNETES_SERVICE_HOST")].value}:{.spec.containers[0].env[?(@.name=="KUBERNETES_SERVICE_PORT")].value}' <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: clusterstorage-pod-policy-probe
spec:
  containers:
    - name: probe
      image: $BUSYBOX_IMAGE
EOF
	) || return 1
	[[ $got == "true Never 127.0.0.1:$APISERVER_PORT" ]]
}

# ensure_pod_policy: applies the policy (idempotent: server-side apply, on every up, also when the
# cluster already runs) and waits until the API server applies it to new pods.
ensure_pod_policy() {
	sed "s|__API_PORT__|$APISERVER_PORT|g" "$POD_POLICY" |
		kubectl apply --server-side --force-conflicts --field-manager=clusterstorage-cluster-sh -f - >/dev/null
	wait_for "the pod policy to take effect (a dry-run pod gets hostNetwork, the API env, imagePullPolicy Never)" 60 kube-apiserver -- pod_policy_probe
}

# --- subcommands ----------------------------------------------------------------

cmd_up() {
	local start=$SECONDS i
	if [[ -f $KUBECONFIG_PATH && -f $STATE/nodes.json && -x $BIN/kube ]] && all_running && all_nodes_ready 2>/dev/null; then
		log "already running; $NODE_COUNT node(s) Ready"
		if on_host 1; then import_images; fi # any image built since (e.g. by a newer cluster.sh)
		ensure_pod_policy # a cluster started by an older cluster.sh, or a changed policy
		echo "$KUBECONFIG_PATH"
		return 0
	fi
	ensure_packages
	ensure_binaries
	ensure_images
	mkdir -p "$STATE" "$LOGS" "$RUN"
	ensure_pki
	ensure_kubeconfigs
	ensure_ssh_keys
	# etcd and the apiserver in turn: everything else needs the API. Then
	# the rest start together; the images are imported while the kubelet
	# registers (it needs none of them to become Ready, and `up` returns
	# only after they are in).
	start_etcd
	start_apiserver
	start_controller_manager
	start_scheduler
	if on_host 1; then
		write_host_node_config
		start_containerd
		start_kubelet
		start_sshd
	fi
	start_machines &
	local machines=$!
	if on_host 1; then import_images; fi
	wait_controller_manager
	wait_scheduler
	if on_host 1; then wait_kubelet; fi
	wait "$machines" || die "machine nodes failed to start"
	for ((i = 1; i <= NODE_COUNT; i++)); do
		init_node "$i"
	done
	for ((i = 1; i <= NODE_COUNT; i++)); do
		wait_for "node $(node_name "$i") Ready" 120 "" -- node_ready "$(node_name "$i")"
	done
	write_nodes_json
	for ((i = 1; i <= NODE_COUNT; i++)); do
		check_ssh "$i"
	done
	wait_for "ServiceAccount default/default" 60 kube-controller-manager -- kubectl -n default get serviceaccount default
	ensure_pod_policy
	log "cluster up in $((SECONDS - start))s: $NODE_COUNT node(s) Ready, API https://127.0.0.1:$APISERVER_PORT"
	echo "$KUBECONFIG_PATH"
}

# remove_containers: kills and deletes every container containerd runs for
# the kubelet; the shims exit with their last task.
remove_containers() {
	is_running containerd || return 0
	local ids id
	ids=$(ctr_k8s containers ls -q 2>/dev/null || true)
	[[ -z $ids ]] && return 0
	log "removing $(wc -w <<<"$ids") containers"
	for id in $ids; do
		ctr_k8s tasks kill --signal SIGKILL "$id" >/dev/null 2>&1 || true
	done
	for id in $ids; do
		ctr_k8s tasks delete --force "$id" >/dev/null 2>&1 || true
		ctr_k8s containers delete "$id" >/dev/null 2>&1 || true
	done
}

# kill_leftover_shims: a shim that outlived containerd (it is designed to)
# is ours when its command line names our containerd socket.
kill_leftover_shims() {
	local p cmdline
	for p in /proc/[0-9]*; do
		cmdline=$(tr '\0' ' ' 2>/dev/null <"$p/cmdline") || continue
		if [[ $cmdline == *containerd-shim*" -address $CONTAINERD_SOCK "* ]]; then
			log "killing leftover shim ${p#/proc/}"
			kill -KILL "${p#/proc/}" 2>/dev/null || true
		fi
	done
}

# unmount_below_state: every mount point below the state dir (kubelet's
# token tmpfs mounts, overlay rootfs mounts, sandbox shm), deepest first.
unmount_below_state() {
	local mp
	while read -r mp; do
		umount "$mp" 2>/dev/null || umount -l "$mp" || true
	done < <(awk -v s="$STATE/" 'index($2, s) == 1 { print $2 }' /proc/self/mounts | awk '{ print length, $0 }' | sort -rn | cut -d' ' -f2-)
}

# remove_host_node_traces: node 1's pod cgroups (whatever still runs in them is killed: shims
# and their containers outlive containerd), then the few paths the kubelet and containerd use
# outside the state dir (compiled in, not configurable). Only what is ours goes: log symlinks
# that point into the state dir, the device-plugin socket when nothing listens on it, then
# directories if they are empty (rmdir), so nothing another runtime on this machine uses is
# touched.
remove_host_node_traces() {
	"$HERE/node.sh" cgroups-remove "$NODE"
	local l d sock=/var/lib/kubelet/device-plugins/kubelet.sock
	for l in /var/log/containers/*.log; do
		[[ -L $l && $(readlink "$l") == "$STATE"/* ]] && rm -f "$l"
	done
	if [[ -S $sock ]] && ! ss -xlH 2>/dev/null | grep -qF "$sock"; then
		rm -f "$sock"
	fi
	for d in /var/lib/kubelet/device-plugins /var/lib/kubelet /var/log/containers /run/containerd/s /run/containerd; do
		rmdir "$d" 2>/dev/null || true # fails when missing or not empty
	done
}

cmd_down() {
	if [[ ! -d $STATE ]]; then
		log "nothing to do: $STATE does not exist"
		return 0
	fi
	# The machine nodes first (a poweroff stops their kubelets and containers, and nothing of
	# them is left); then node 1's kubelet, so that it restarts nothing, its containers and
	# containerd; then the control plane, and etcd last.
	local dir pids=()
	for dir in "$STATE"/nodes/*/; do
		[[ -f $dir/machine.env ]] || continue
		"$HERE/node.sh" destroy "$dir" 9<&- &
		pids+=("$!")
	done
	local p rc=0
	for p in "${pids[@]}"; do wait "$p" || rc=1; done
	((rc == 0)) || die "a machine node did not stop cleanly; not deleting $STATE"
	# Node 1 ran here only when its kubelet configuration was written.
	local host_node=0
	[[ -f $STATE/kubelet-config.yaml ]] && host_node=1
	stop_daemons kubelet sshd
	remove_containers
	stop_daemons containerd
	kill_leftover_shims
	stop_daemons kube-scheduler kube-controller-manager kube-apiserver
	stop_daemons etcd
	if ((host_node)); then remove_host_node_traces; fi
	unmount_below_state
	if awk -v s="$STATE/" 'index($2, s) == 1 { found = 1 } END { exit !found }' /proc/self/mounts; then
		die "mounts are left below $STATE; not deleting it"
	fi
	log "deleting $STATE"
	rm -rf "$STATE"
}

cmd_env() {
	local i names=()
	for ((i = 1; i <= NODE_COUNT; i++)); do names+=("$(node_name "$i")"); done
	echo "export KUBECONFIG=$KUBECONFIG_PATH"
	echo "export CLUSTER_DIR=$STATE"
	echo "export CLUSTERSTORAGE_NODE=$NODE"
	echo "export CLUSTERSTORAGE_NODES='${names[*]}'"
}

cmd_status() {
	local c rc=0 i name
	for c in $(host_components); do
		if is_running "$c"; then
			printf '%-24s running (pid %s)\n' "$c" "$(pid_of "$c")"
		else
			printf '%-24s stopped\n' "$c"
			rc=1
		fi
	done
	for ((i = 1; i <= NODE_COUNT; i++)); do
		on_host "$i" && continue
		name=$(node_name "$i")
		printf '%-24s ' "machine $i"
		if [[ -f $STATE/nodes/$name/machine.env ]]; then
			"$HERE/node.sh" status "$STATE/nodes/$name" || rc=1
		else
			echo "$name not created"
			rc=1
		fi
	done
	if [[ -f $KUBECONFIG_PATH && -x $BIN/kube ]] && is_running kube-apiserver; then
		kubectl get nodes -o wide -L topology.kubernetes.io/zone || rc=1
	fi
	echo "kubeconfig: $KUBECONFIG_PATH"
	echo "nodes: $STATE/nodes.json"
	return $rc
}

main() {
	case ${1:-} in
	up)
		lock
		cmd_up
		;;
	down)
		lock
		cmd_down
		;;
	env) cmd_env ;;
	status) cmd_status ;;
	*)
		echo "usage: $0 up|down|env|status" >&2
		exit 2
		;;
	esac
}

main "$@"
