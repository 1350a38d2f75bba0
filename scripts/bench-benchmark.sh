#!/usr/bin/env bash
# bench-benchmark.sh: how faithful and how costly is clusterstorage_storage_benchmark?
#
# The same fio job on the same directory, alternating, BENCH_ROUNDS times:
#   host  raw fio on this machine (the cluster's node) in BENCH_DIR;
#   ds    the data source through terraform, a no-provisioner WaitForFirstConsumer StorageClass
#         and a local PV on BENCH_DIR (a temporary claim and a fio pod, deleted afterwards);
#   di    the same through an Immediate class and a second local PV on BENCH_DIR (the claim is
#         bound when it is created, so the scheduler has no volume binding to wait for);
#   np    the data source with node_path = BENCH_DIR: fio over SSH (a loopback sshd logging in
#         as this user, as the cluster's node).
# Prints, per round and as medians: read IOPS of each and their ratio to the host's, mean read
# latency likewise (goal: within ±5 %), and each data source's overhead: the wall time of
# `terraform plan` (which reads the data source) beyond fio's runtime, net of the time the same
# plan takes without the data source and of fio's own setup on the host (issue 13's goals: ≤ 2 s
# through a pod, ≤ 0.5 s on a node path). A WaitForFirstConsumer claim costs about a second more
# than an Immediate one: kube-scheduler binds it, then checks once a second whether the binding
# is complete before it binds the pod to the node.
#
# Needs a running local cluster (tools/kube/cluster.sh up), bin/terraform (make bin/terraform),
# fio and python3 on this machine. Leaves nothing behind: the class, the volume, the directory and
# the temporary Terraform files are removed on exit.
#
#   BENCH_ROUNDS   rounds of host + ds (default 3)
#   BENCH_RUNTIME  fio runtime per run (default 10s)
#   BENCH_SIZE     fio file size (default 200M)
#   BENCH_PROFILE  profile whose job both sides run: database (default) or random_read
#   BENCH_DIR      the directory all sides use (default $CLUSTER_DIR/volumes/bench-benchmark)
#   BENCH_SSH_PORT the loopback sshd's port (default 22124)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=scripts/lib.sh
source scripts/lib.sh

ROUNDS="${BENCH_ROUNDS:-3}"
RUNTIME="${BENCH_RUNTIME:-10s}"
SIZE="${BENCH_SIZE:-200M}"
PROFILE="${BENCH_PROFILE:-database}"
IMAGE=localhost/clusterstorage/fio:3.33

log() { printf 'bench-benchmark: %s\n' "$*" >&2; }
die() {
	log "ERROR: $*"
	exit 1
}

tools/kube/cluster.sh status >/dev/null 2>&1 || die "the local cluster is not running: tools/kube/cluster.sh up"
eval "$(tools/kube/cluster.sh env)" # KUBECONFIG, CLUSTER_DIR, CLUSTERSTORAGE_NODE
[[ -x bin/terraform ]] || die "bin/terraform is missing: make bin/terraform"
command -v fio >/dev/null || die "fio is not installed on this machine"
command -v python3 >/dev/null || die "python3 is not installed"
kubectl() { "$ROOT/bin/kube" kubectl --kubeconfig "$KUBECONFIG" "$@"; }

DIR="${BENCH_DIR:-$CLUSTER_DIR/volumes/bench-benchmark}"
case "$PROFILE" in
database) JOB=(--name=database --rw=randrw --rwmixread=70 --bs=8k --iodepth=16) ;;
random_read) JOB=(--name=random_read --rw=randread --bs=4k --iodepth=64) ;;
*) die "BENCH_PROFILE must be database or random_read" ;;
esac
# The options the data source renders for every job (internal/fio), for the host run.
JOB+=(--size="$SIZE" --numjobs=1 --ioengine=libaio --direct=1 --runtime="$RUNTIME")

work="$(mktemp -d)"
name="bench-benchmark-$$"
cleanup() {
	kubectl delete pv "$name" "$name-immediate" --ignore-not-found --wait=false >/dev/null 2>&1 || true
	kubectl delete storageclass "$name" "$name-immediate" --ignore-not-found >/dev/null 2>&1 || true
	stop_sshd "$work/ssh"
	rm -rf "$work"
	[[ -z "${BENCH_DIR:-}" ]] && rm -rf "$DIR"
	return 0
}
trap cleanup EXIT

log "building the provider"
make --no-print-directory build PROVIDER_BIN="$work/provider/terraform-provider-clusterstorage" >/dev/null
cat >"$work/dev.tfrc" <<RC
provider_installation {
  dev_overrides {
    "registry.terraform.io/clusterstorage/clusterstorage" = "$work/provider"
  }
  direct {}
}
RC
export TF_CLI_CONFIG_FILE="$work/dev.tfrc" CHECKPOINT_DISABLE=1 TF_IN_AUTOMATION=1

mkdir -p "$DIR"
# local_class NAME MODE: a no-provisioner class NAME and a local PV NAME on DIR, pinned to the node.
local_class() {
	kubectl apply -f - >/dev/null <<YAML
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: $1
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: $2
---
apiVersion: v1
kind: PersistentVolume
metadata:
  name: $1
spec:
  capacity:
    storage: 10Gi
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: $1
  local:
    path: $DIR
  nodeAffinity:
    required:
      nodeSelectorTerms:
        - matchExpressions:
            - key: kubernetes.io/hostname
              operator: In
              values: [$CLUSTERSTORAGE_NODE]
YAML
}
local_class "$name" WaitForFirstConsumer
local_class "$name-immediate" Immediate

SSH_PORT="${BENCH_SSH_PORT:-22124}"
start_sshd "$work/ssh" "$SSH_PORT"

provider_block="terraform {
  required_providers {
    clusterstorage = { source = \"clusterstorage/clusterstorage\" }
  }
}

provider \"clusterstorage\" {
  kubernetes {
    config_path = \"$KUBECONFIG\"
  }
  ssh {
    user             = \"$(id -un)\"
    private_key_path = \"$work/ssh/client_ed25519\"
    known_hosts_path = \"$work/ssh/known_hosts\"
  }
  nodes = {
    \"$CLUSTERSTORAGE_NODE\" = { host = \"127.0.0.1\", port = $SSH_PORT }
  }
}
"
mkdir -p "$work/ds" "$work/di" "$work/np" "$work/empty"
printf '%s' "$provider_block" >"$work/empty/main.tf"
# pod_tf RUN CLASS: the configuration of RUN (ds or di), the data source through a pod on CLASS.
pod_tf() {
	cat >"$work/$1/main.tf" <<TF
$provider_block
data "clusterstorage_storage_benchmark" "bench" {
  storage_class     = "$2"
  node              = "$CLUSTERSTORAGE_NODE"
  image             = "$IMAGE"
  image_pull_policy = "Never"
  profile           = "$PROFILE"
  size              = "$SIZE"
  runtime           = "$RUNTIME"
}

output "result" {
  value = {
    read_iops    = data.clusterstorage_storage_benchmark.bench.read.iops
    read_lat_us  = data.clusterstorage_storage_benchmark.bench.read.latency_us.mean
    write_iops   = data.clusterstorage_storage_benchmark.bench.write.iops
    write_lat_us = data.clusterstorage_storage_benchmark.bench.write.latency_us.mean
    runtime      = data.clusterstorage_storage_benchmark.bench.runtime_seconds
  }
}
TF
}
pod_tf ds "$name"
pod_tf di "$name-immediate"
cat >"$work/np/main.tf" <<TF
$provider_block
data "clusterstorage_storage_benchmark" "bench" {
  node      = "$CLUSTERSTORAGE_NODE"
  node_path = "$DIR"
  profile   = "$PROFILE"
  size      = "$SIZE"
  runtime   = "$RUNTIME"
}
TF
sed -n '/^output "result"/,$p' "$work/ds/main.tf" >>"$work/np/main.tf"

now() { date +%s.%N; }

# host_run: raw fio in DIR, as the pod would run it; prints "read_iops read_lat write_iops
# write_lat runtime wall".
host_run() {
	local start end
	start=$(now)
	fio --output-format=json --eta=never --directory="$DIR" --group_reporting --time_based \
		--percentile_list=50:95:99:99.9 --lat_percentiles=1 --unlink=1 "${JOB[@]}" >"$work/host.json"
	end=$(now)
	python3 - "$work/host.json" "$start" "$end" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
r, w = j["read"], j["write"]
print(r["iops"], r["lat_ns"]["mean"] / 1000, w["iops"], w["lat_ns"]["mean"] / 1000, max(r["runtime"], w["runtime"]) / 1000,
      float(sys.argv[3]) - float(sys.argv[2]))
PY
}

# ds_run DIR: the data source in DIR (ds or np) through `terraform plan` (which reads it); prints
# the same fields, the last the plan's wall time.
ds_run() {
	local start end
	start=$(now)
	(cd "$work/$1" && "$ROOT/bin/terraform" plan -no-color -out=plan.out >"$work/$1.log" 2>&1) || {
		cat "$work/$1.log" >&2
		die "terraform plan failed"
	}
	end=$(now)
	(cd "$work/$1" && "$ROOT/bin/terraform" show -json plan.out) >"$work/plan.json"
	python3 - "$work/plan.json" "$start" "$end" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
v = plan["planned_values"]["outputs"]["result"]["value"]
print(v["read_iops"], v["read_lat_us"], v["write_iops"], v["write_lat_us"], v["runtime"], float(sys.argv[3]) - float(sys.argv[2]))
PY
}

log "baseline: terraform plan without the data source"
start=$(now)
(cd "$work/empty" && "$ROOT/bin/terraform" plan -no-color >"$work/empty.log" 2>&1) || {
	cat "$work/empty.log" >&2
	die "terraform plan failed"
}
baseline=$(python3 -c "print($(now) - $start)")

log "$ROUNDS rounds of the $PROFILE job (size $SIZE, runtime $RUNTIME) in $DIR, host and data source alternating"
: >"$work/rows"
for round in $(seq 1 "$ROUNDS"); do
	log "round $round: host"
	h=$(host_run)
	log "round $round: data source through a pod"
	d=$(ds_run ds)
	log "round $round: data source on the node path"
	n=$(ds_run np)
	log "round $round: data source through a pod, Immediate class"
	i=$(ds_run di)
	echo "$round $h $d $n $i" >>"$work/rows"
done

python3 - "$work/rows" "$baseline" <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
baseline = float(sys.argv[2])
med = statistics.median
print(f"{'round':>6} {'host r IOPS':>11} {'pod':>6} {'node':>6} {'host r lat µs':>13} {'pod':>6} {'node':>6}"
      f" {'host setup s':>12} {'pod overhead s':>14} {'node overhead s':>15} {'pod (Immediate) s':>17}")
cols = {k: [] for k in ("pod_iops", "np_iops", "pod_lat", "np_lat", "host", "pod", "np", "imm")}
for r in rows:
    n, hri, hrl, hwi, hwl, hrt, hwall = r[:7]
    pod, np, imm = r[7:13], r[13:19], r[19:25]
    host_setup = hwall - hrt  # fio's own setup (laying out its file) beyond its runtime
    # What a data source adds beyond fio's runtime, terraform's own plan time and fio's own setup.
    extra = lambda d: d[5] - d[4] - baseline - host_setup
    vals = (pod[0] / hri, np[0] / hri, pod[1] / hrl, np[1] / hrl, host_setup, extra(pod), extra(np), extra(imm))
    for k, v in zip(cols, vals):
        cols[k].append(v)
    print(f"{int(n):>6} {hri:>11.0f} {vals[0]:>6.3f} {vals[1]:>6.3f} {hrl:>13.0f} {vals[2]:>6.3f} {vals[3]:>6.3f}"
          f" {host_setup:>12.2f} {vals[5]:>14.2f} {vals[6]:>15.2f} {vals[7]:>17.2f}")
m = {k: med(v) for k, v in cols.items()}
print(f"{'median':>6} {'':>11} {m['pod_iops']:>6.3f} {m['np_iops']:>6.3f} {'':>13} {m['pod_lat']:>6.3f} {m['np_lat']:>6.3f}"
      f" {m['host']:>12.2f} {m['pod']:>14.2f} {m['np']:>15.2f} {m['imm']:>17.2f}")
print("pod, node: the data source through a pod (WaitForFirstConsumer class) and on the node path, as ratios to")
print("raw fio on the host; pod (Immediate): the overhead through a pod with an Immediate class.")
print(f"overhead: plan wall time beyond fio's runtime, net of the {baseline:.2f} s the plan takes without the data source")
print("and of fio's own setup on the host (claim, pod and log through a pod; SSH sessions on the node path).")
ok = all(abs(m[k] - 1) <= 0.05 for k in ("pod_iops", "np_iops", "pod_lat", "np_lat"))
print(f"IOPS and latency within ±5 %: {'yes' if ok else 'no'}; overhead through a pod ≤ 2 s: {'yes' if m['pod'] <= 2 else 'no'};"
      f" on the node path ≤ 0.5 s: {'yes' if m['np'] <= 0.5 else 'no'}")
PY
