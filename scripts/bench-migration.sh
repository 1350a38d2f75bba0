#!/usr/bin/env bash
# Volume migration (issue 28): a claim holding BENCH_MIGRATION_MIB MiB of random data, moved by
# clusterstorage_volume_migration between two classes of static local volumes on this machine's
# node while a Deployment keeps rewriting 1 % of it, measured side by side in one run against:
#
#   - copy throughput: the migration's first copy (rsync in the copy pod while the workload runs,
#     as the pod's script times it) against `rsync -a` of the same data between two directories
#     on the same filesystem, measured before and after the migration (the faster). Goal: at
#     least 0.9x. Printed beside it: the first copy with its pod's start and end, and rsync with
#     the pod's flags on the node (what the pod's container costs, apart from the flags).
#   - downtime (the workload stopped until it is Ready again): the two phases against the one-shot
#     move pvmigrate and korb make (stop, copy everything, start), here its lower bound: the copy
#     is `rsync -a` on the node itself, no copy pod to start. Goal: at most 0.2x.
#
#   - between nodes (issue 44; with a second node in the nodes file): the claim then moved on to a
#     static local volume on node 2 (target_node: an rsync daemon pod there, the client on node
#     1), its first copy against `rsync -a` over SSH (the nodes' sshd) between the same two
#     directories. Goal: at least 0.8x. BENCH_MIGRATION_CROSSNODE_OUT: a file for that figure.
#   - between nodes over SSH (cross_node_transfer = "ssh", the provider's ssh block reaching both
#     nodes): the claim, then on node 2, moved back to a static local volume here, its first copy
#     (rsync through the provider's two SSH connections) against `rsync -a` over SSH from node 2's
#     directory to one here. Appended to the same figure.
#
#   BENCH_MIGRATION_MIB  the data in the claim (default 2048); 1 % of it is rewritten meanwhile
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=scripts/lib.sh
source scripts/lib.sh

MIB="${BENCH_MIGRATION_MIB:-2048}"
HOT_MIB=$(((MIB + 99) / 100))
BUSYBOX=localhost/clusterstorage/busybox:1
RSYNC=localhost/clusterstorage/rsync:3

make --no-print-directory build bin/terraform >/dev/null
cluster_up
TF_CLI_CONFIG_FILE="$(scripts/devrc.sh)"
export TF_CLI_CONFIG_FILE CHECKPOINT_DISABLE=1 TF_IN_AUTOMATION=1
export KUBECONFIG="$KUBECONFIG_PATH"
# The node that is this machine: the volumes' directories are here.
node="$(jq -r '.nodes[] | select(.machine_dir == "") | .name' "$ROOT/.cluster/nodes.json" | head -1)"
[[ -n $node ]] || {
	echo "bench-migration: no node of the local cluster is this machine" >&2
	exit 1
}
ns="bench-migration-$(printf '%04x%04x' $RANDOM $RANDOM)"
work="$(mktemp -d -p /var/tmp bench-migration.XXXXXX)"

far_dir=""
cleanup() {
	(cd "$work/tf" 2>/dev/null && terraform destroy -auto-approve -no-color >/dev/null 2>&1) || true
	(cd "$work/tf2" 2>/dev/null && terraform destroy -auto-approve -no-color >/dev/null 2>&1) || true
	(cd "$work/tf3" 2>/dev/null && terraform destroy -auto-approve -no-color >/dev/null 2>&1) || true
	[[ -z $far_dir ]] || far rm -rf "$far_dir" "$far_dir-ssh" || true
	kubectl delete namespace "$ns" --ignore-not-found --wait=true --timeout=2m >/dev/null 2>&1 || true
	kubectl delete pv -l "bench=$ns" --ignore-not-found --wait=false >/dev/null 2>&1 || true
	kubectl delete storageclass "$ns-from" "$ns-to" "$ns-far" "$ns-back" --ignore-not-found >/dev/null 2>&1 || true
	cleanup_work "$work"
	cluster_down_if_started
}
trap cleanup EXIT

# ready waits for the writer to be Ready, and shows why not when it does not get there.
ready() {
	kubectl -n "$ns" rollout status deployment/writer --timeout=2m >/dev/null && return
	kubectl -n "$ns" get pods,pvc -o wide >&2
	kubectl -n "$ns" describe pods >&2
	return 1
}

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

echo "==> bench-migration: $MIB MiB on node $node, $HOT_MIB MiB rewritten meanwhile" >&2
mkdir -p "$work/src" "$work/dst" "$work/tf"
for ((i = 0; i < 64; i++)); do
	head -c "$((MIB * 1024 * 1024 / 64))" /dev/urandom >"$work/src/file-$i"
done

# volume NAME DIR CLASS: a static local volume of this machine's node.
volume() {
	cat <<YAML
apiVersion: v1
kind: PersistentVolume
metadata: {name: $1, labels: {bench: $ns}}
spec:
  capacity: {storage: $((MIB + 256))Mi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: $3
  local: {path: $2}
  nodeAffinity:
    required:
      nodeSelectorTerms:
        - matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [$node]}]
---
YAML
}
{
	for class in "$ns-from" "$ns-to"; do
		printf 'apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: %s}\n' "$class"
		printf 'provisioner: kubernetes.io/no-provisioner\nvolumeBindingMode: WaitForFirstConsumer\nreclaimPolicy: Retain\n---\n'
	done
	volume "$ns-src" "$work/src" "$ns-from"
	volume "$ns-dst" "$work/dst" "$ns-to"
	cat <<YAML
apiVersion: v1
kind: Namespace
metadata: {name: $ns}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: $ns}
spec:
  storageClassName: $ns-from
  volumeName: $ns-src
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: $((MIB + 256))Mi}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: writer, namespace: $ns}
spec:
  replicas: 1
  selector: {matchLabels: {app: writer}}
  template:
    metadata: {labels: {app: writer}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
        - name: writer
          image: $BUSYBOX
          imagePullPolicy: Never
          command: [sh, -c, 'while true; do dd if=/dev/urandom of=/data/hot.tmp bs=1048576 count=$HOT_MIB 2>/dev/null && mv /data/hot.tmp /data/hot; sleep 1; done']
          volumeMounts: [{name: data, mountPath: /data}]
          readinessProbe: {exec: {command: [test, -e, /data/hot]}, periodSeconds: 1}
      volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]
YAML
} | kubectl apply -f - >/dev/null
ready

# rsync_anchor [FLAGS]: rsync (default -a) of the data between two directories, in seconds.
# Every timed copy starts with the dirty pages of the one before written out (sync), so none pays
# for another's.
rsync_anchor() {
	sync
	local t
	t=$(now)
	rsync "${@:--a}" "$work/src/" "$work/rsync-copy/" >/dev/null
	since "$t"
	rm -rf "$work/rsync-copy"
	sync
}
# The first copy pod's flags for a source without sparse files (internal/volumemigration/
# scripts/copy.sh; it adds -S for one with them).
POD_FLAGS=(-aH --numeric-ids --delete --stats)

# The anchors, right before the migration, with the same data in the page cache.
echo "==> rsync -a of the data between two directories; the same with the copy pod's flags" >&2
rsync_before=$(rsync_anchor)
flags_before=$(rsync_anchor "${POD_FLAGS[@]}")

echo "==> one-shot move: stop, rsync -a everything, start" >&2
sync
t=$(now)
kubectl -n "$ns" scale deployment/writer --replicas=0 >/dev/null
kubectl -n "$ns" wait --for=delete pod -l app=writer --timeout=2m >/dev/null
rsync -a "$work/src/" "$work/oneshot/"
kubectl -n "$ns" scale deployment/writer --replicas=1 >/dev/null
ready
oneshot_s=$(since "$t")
rm -rf "$work/oneshot"
sync

echo "==> clusterstorage_volume_migration" >&2
{
	provider_tf
	cat <<HCL

resource "clusterstorage_volume_migration" "bench" {
  namespace         = "$ns"
  claim             = "data"
  storage_class     = "$ns-to"
  image             = "$RSYNC"
  image_pull_policy = "Never"
}

output "downtime_seconds" { value = clusterstorage_volume_migration.bench.downtime_seconds }
output "bytes_copied" { value = clusterstorage_volume_migration.bench.bytes_copied }
HCL
} >"$work/tf/main.tf"
t=$(now)
(cd "$work/tf" && TF_LOG_PROVIDER=INFO TF_LOG_PATH="$work/tf/provider.log" terraform apply -auto-approve -no-color >"$work/tf/apply.log" 2>&1) ||
	{ cat "$work/tf/apply.log" >&2; exit 1; }
apply_s=$(since "$t")
downtime_s=$(cd "$work/tf" && terraform output -raw downtime_seconds | awk '{ printf "%.2f", $1 }')
echo "==> rsync -a of the data between two directories, again" >&2
rsync_after=$(rsync_anchor)
flags_after=$(rsync_anchor "${POD_FLAGS[@]}")
# The faster of the two: the anchors vary from run to run (the page cache, the other processes
# of this 2-core machine), and the faster is the stricter goal.
fastest() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (a < b ? a : b) }'; }
rsync_s=$(fastest "$rsync_before" "$rsync_after")
flags_s=$(fastest "$flags_before" "$flags_after")
# The first copy: from "copying while the workload runs" to the first copy pod's end.
# stamp TEXT [N]: when the provider logged the Nth line (default 1) with TEXT; between A B: the
# seconds from stamp A to stamp B.
stamp() { grep -F "$1" "$work/tf/provider.log" | sed -n "${2:-1}p" | cut -d' ' -f1; }
between() { awk -v a="$(date -d "$1" +%s.%N)" -v b="$(date -d "$2" +%s.%N)" 'BEGIN { printf "%.2f", b - a }'; }
first_s=$(between "$(stamp "copying while the workload runs")" "$(stamp "copy pod finished")")
# The downtime's parts: the workload's pods stopping; the final copy pod (its start, the delta,
# the verification); the swap and the start (the rest).
stopping_s=$(between "$(stamp "stopping the workload")" "$(stamp "copying the delta")")
final_s=$(between "$(stamp "copying the delta")" "$(stamp "copy pod finished" 2)")
# field NAME [N]: a number the Nth copy pod's log line has (default 1); the log writes numbers as
# JSON does: bytes="6.815744e+07".
field() {
	grep -F "copy pod finished" "$work/tf/provider.log" | sed -n "${2:-1}p" | grep -o " $1=\"\?[0-9.e+-]*" | tr -d '"' | cut -d= -f2 |
		awk '{ printf "%.3f", $1 }'
}
first_bytes=$(field bytes | cut -d. -f1)
copy_s=$(field copy_seconds)
swap_s=$(awk -v d="$downtime_s" -v a="$stopping_s" -v b="$final_s" 'BEGIN { printf "%.2f", d - a - b }')

mibs() { awk -v m="$1" -v s="$2" 'BEGIN { printf "%.0f", m / s }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
verdict() { awk -v r="$1" -v g="$2" -v dir="$3" 'BEGIN { print ((dir == "min" && r >= g) || (dir == "max" && r <= g)) ? "met" : "MISSED" }'; }
first_mib=$(awk -v b="$first_bytes" 'BEGIN { print b / 1048576 }')
first_mibs=$(mibs "$first_mib" "$first_s")
copy_mibs=$(mibs "$first_mib" "$copy_s")
rsync_mibs=$(mibs "$MIB" "$rsync_s")
flags_mibs=$(mibs "$MIB" "$flags_s")
copy_ratio=$(ratio "$copy_mibs" "$rsync_mibs")
down_ratio=$(ratio "$downtime_s" "$oneshot_s")
printf '\nvolume migration: %d MiB, %d MiB rewritten meanwhile, static local volumes on %s, %s\n' "$MIB" "$HOT_MIB" "$node" "$(terraform version | head -1)"
printf '  %-58s %8s s %6s MiB/s   (before %s s, after %s s)\n' "rsync -a between two directories" "$rsync_s" "$rsync_mibs" "$rsync_before" "$rsync_after"
printf '  %-58s %8s s %6s MiB/s   (before %s s, after %s s)\n' "rsync ${POD_FLAGS[*]:0:3} on the node (the pod's flags)" "$flags_s" "$flags_mibs" "$flags_before" "$flags_after"
printf '  %-58s %8s s %6s MiB/s\n' "the migration's first copy (rsync in the copy pod)" "$copy_s" "$copy_mibs"
printf '  %-58s %8s s %6s MiB/s\n' "the same with the pod's start and end" "$first_s" "$first_mibs"
printf '  %-58s %8s s\n' "one-shot move's downtime (stop, rsync -a everything, start)" "$oneshot_s"
printf '  %-58s %8s s\n' "the migration's downtime (stop, delta, verify, swap, start)" "$downtime_s"
printf '    %-56s %8s s\n' "the workload's pods stopping" "$stopping_s"
printf '    %-56s %8s s   (delta %s s, verification %s s)\n' "the final copy pod" "$final_s" "$(field copy_seconds 2)" "$(field verify_seconds 2)"
printf '    %-56s %8s s\n' "the swap, the workload started and Ready" "$swap_s"
printf '  %-58s %8s s\n' "the migration's whole apply" "$apply_s"
echo "first copy / rsync -a throughput = $copy_ratio (goal >= 0.9: $(verdict "$copy_ratio" 0.9 min)); / the same flags on the node = $(ratio "$copy_mibs" "$flags_mibs")"
echo "downtime / one-shot downtime = $down_ratio (goal <= 0.2: $(verdict "$down_ratio" 0.2 max))"

# Between nodes: node 2 of the nodes file, over its sshd.
nodes_json="$ROOT/.cluster/nodes.json"
far_node="$(jq -r '.nodes[] | select(.machine_dir != "") | .name' "$nodes_json" | head -1)"
[[ -n $far_node ]] || exit 0
far_json="$(jq -c --arg n "$far_node" '.nodes[] | select(.name == $n)' "$nodes_json")"
SSH=(ssh -p "$(jq -r .ssh_port <<<"$far_json")" -i "$(jq -r .ssh_private_key "$nodes_json")" -o "UserKnownHostsFile=$(jq -r .ssh_known_hosts "$nodes_json")" -o BatchMode=yes)
far_host="$(jq -r .ssh_user "$nodes_json")@$(jq -r .ssh_host <<<"$far_json")"
far() { "${SSH[@]}" "$far_host" "$(printf '%q ' "$@")"; }
far_hostname="$(kubectl get node "$far_node" -o jsonpath='{.metadata.labels.kubernetes\.io/hostname}')"
# On the node's root filesystem: its data disk (2 GB) holds neither the new volume and a copy over
# SSH beside it nor the default 2 GiB.
far_dir="/var/tmp/$ns"
far mkdir -p "$far_dir"
echo "==> between nodes: rsync -a over SSH from $node to $far_node" >&2
ssh_anchor() {
	sync
	local t
	t=$(now)
	rsync -a -e "${SSH[*]}" "$work/dst/" "$far_host:$far_dir-ssh/" >/dev/null || return 1
	since "$t"
	far rm -rf "$far_dir-ssh"
}
ssh_before=$(ssh_anchor)
{
	printf 'apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: %s}\n' "$ns-far"
	printf 'provisioner: kubernetes.io/no-provisioner\nvolumeBindingMode: WaitForFirstConsumer\nreclaimPolicy: Retain\n---\n'
	volume "$ns-far" "$far_dir" "$ns-far" | sed "s/values: \[$node\]/values: [$far_hostname]/"
} | kubectl apply -f - >/dev/null
echo "==> clusterstorage_volume_migration to node $far_node" >&2
mkdir -p "$work/tf2"
{
	provider_tf
	cat <<HCL

resource "clusterstorage_volume_migration" "far" {
  namespace         = "$ns"
  claim             = "data"
  storage_class     = "$ns-far"
  target_node       = "$far_node"
  image             = "$RSYNC"
  image_pull_policy = "Never"
}
HCL
} >"$work/tf2/main.tf"
(cd "$work/tf2" && TF_LOG_PROVIDER=INFO TF_LOG_PATH="$work/tf2/provider.log" terraform apply -auto-approve -no-color >"$work/tf2/apply.log" 2>&1) ||
	{ cat "$work/tf2/apply.log" >&2; exit 1; }
ssh_after=$(ssh_anchor)
ssh_s=$(fastest "$ssh_before" "$ssh_after")
cross_bytes=$(grep -F "copy pod finished" "$work/tf2/provider.log" | head -1 | grep -o ' bytes="\?[0-9.e+-]*' | tr -d '"' | cut -d= -f2 | awk '{ printf "%d", $1 }')
cross_copy_s=$(grep -F "copy pod finished" "$work/tf2/provider.log" | head -1 | grep -o ' copy_seconds="\?[0-9.e+-]*' | tr -d '"' | cut -d= -f2 | awk '{ printf "%.3f", $1 }')
cross_mib=$(awk -v b="$cross_bytes" 'BEGIN { print b / 1048576 }')
data_mib=$(du -sm "$work/dst" | cut -f1)
cross_mibs=$(mibs "$cross_mib" "$cross_copy_s")
ssh_mibs=$(mibs "$data_mib" "$ssh_s")
cross_ratio=$(ratio "$cross_mibs" "$ssh_mibs")
{
	printf '\nvolume migration between nodes: %s MiB from %s to %s (static local volumes)\n' "$data_mib" "$node" "$far_node"
	printf '  %-58s %8s s %6s MiB/s   (before %s s, after %s s)\n' "rsync -a over SSH between the same two directories" "$ssh_s" "$ssh_mibs" "$ssh_before" "$ssh_after"
	printf '  %-58s %8s s %6s MiB/s\n' "the first copy between nodes (rsync daemon protocol)" "$cross_copy_s" "$cross_mibs"
	echo "first copy between nodes / rsync over SSH = $cross_ratio (goal >= 0.8: $(verdict "$cross_ratio" 0.8 min))"
} | tee ${BENCH_MIGRATION_CROSSNODE_OUT:+"$BENCH_MIGRATION_CROSSNODE_OUT"}

# Between nodes over SSH: the claim, now on node 2, moved back to a volume of this machine's node
# by the copy over the provider's SSH connections; against rsync -a over SSH from node 2's
# directory to one here (node 2's sshd, as the provider reaches it).
ssh_back_anchor() {
	sync
	local t
	t=$(now)
	rsync -a -e "${SSH[*]}" "$far_host:$far_dir/" "$work/back-ssh/" >/dev/null || return 1
	since "$t"
	rm -rf "$work/back-ssh"
}
echo "==> between nodes over SSH: rsync -a over SSH from $far_node to $node" >&2
back_before=$(ssh_back_anchor)
mkdir -p "$work/back" "$work/tf3"
{
	printf 'apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: %s}\n' "$ns-back"
	printf 'provisioner: kubernetes.io/no-provisioner\nvolumeBindingMode: WaitForFirstConsumer\nreclaimPolicy: Retain\n---\n'
	volume "$ns-back" "$work/back" "$ns-back"
} | kubectl apply -f - >/dev/null
near_json="$(jq -c --arg n "$node" '.nodes[] | select(.name == $n)' "$nodes_json")"
echo "==> clusterstorage_volume_migration back to node $node over SSH" >&2
{
	provider_tf "$(
		cat <<HCL
  ssh {
    user             = "$(jq -r .ssh_user "$nodes_json")"
    private_key_path = "$(jq -r .ssh_private_key "$nodes_json")"
    known_hosts_path = "$(jq -r .ssh_known_hosts "$nodes_json")"
  }
  nodes = {
    "$node" = { host = "$(jq -r .ssh_host <<<"$near_json")", port = $(jq -r .ssh_port <<<"$near_json") }
    "$far_node" = { host = "$(jq -r .ssh_host <<<"$far_json")", port = $(jq -r .ssh_port <<<"$far_json") }
  }
HCL
	)"
	cat <<HCL

resource "clusterstorage_volume_migration" "back" {
  namespace           = "$ns"
  claim               = "data"
  storage_class       = "$ns-back"
  target_node         = "$node"
  cross_node_transfer = "ssh"
  image               = "$RSYNC"
  image_pull_policy   = "Never"
}
HCL
} >"$work/tf3/main.tf"
(cd "$work/tf3" && TF_LOG_PROVIDER=INFO TF_LOG_PATH="$work/tf3/provider.log" terraform apply -auto-approve -no-color >"$work/tf3/apply.log" 2>&1) ||
	{ cat "$work/tf3/apply.log" >&2; exit 1; }
back_after=$(ssh_back_anchor)
back_s=$(fastest "$back_before" "$back_after")
over_ssh() { grep -F "copy over SSH finished" "$work/tf3/provider.log" | head -1 | grep -o " $1=\"\?[0-9.e+-]*" | tr -d '"' | cut -d= -f2; }
sshcopy_bytes=$(over_ssh bytes | awk '{ printf "%d", $1 }')
sshcopy_s=$(over_ssh copy_seconds | awk '{ printf "%.3f", $1 }')
sshcopy_mibs=$(mibs "$(awk -v b="$sshcopy_bytes" 'BEGIN { print b / 1048576 }')" "$sshcopy_s")
back_mibs=$(mibs "$data_mib" "$back_s")
ssh_ratio=$(ratio "$sshcopy_mibs" "$back_mibs")
{
	printf '\nvolume migration between nodes over SSH: %s MiB from %s back to %s (static local volumes; load %s)\n' "$data_mib" "$far_node" "$node" "$(cut -d' ' -f1-3 /proc/loadavg)"
	printf '  %-58s %8s s %6s MiB/s   (before %s s, after %s s)\n' "rsync -a over SSH between the same two directories" "$back_s" "$back_mibs" "$back_before" "$back_after"
	printf '  %-58s %8s s %6s MiB/s\n' "the first copy over the provider's SSH connections" "$sshcopy_s" "$sshcopy_mibs"
	echo "first copy between nodes over SSH / rsync over SSH = $ssh_ratio (goal >= 0.8: $(verdict "$ssh_ratio" 0.8 min))"
} | tee ${BENCH_MIGRATION_CROSSNODE_OUT:+-a "$BENCH_MIGRATION_CROSSNODE_OUT"}
