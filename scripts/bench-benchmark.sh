#!/usr/bin/env bash
# bench-benchmark.sh: how faithful and how costly is clusterstorage_storage_benchmark?
#
# The same fio job on the same directory, alternating, BENCH_ROUNDS times:
#   host  raw fio on this machine (the cluster's node) in BENCH_DIR;
#   ds    the data source through terraform, a no-provisioner StorageClass and a local PV on
#         BENCH_DIR (a temporary claim and a fio pod, deleted afterwards).
# Prints, per round and as medians: read IOPS of each and their ratio, mean read latency of each
# and their ratio (goal: within ±5 %), and the data source's overhead: the wall time of
# `terraform plan` (which reads the data source) beyond fio's runtime, also net of the time the
# same plan takes without the data source and of fio's own setup on the host (goal: ≤ 3 s).
#
# Needs a running local cluster (tools/kube/cluster.sh up), bin/terraform (make bin/terraform),
# fio and python3 on this machine. Leaves nothing behind: the class, the volume, the directory and
# the temporary Terraform files are removed on exit.
#
#   BENCH_ROUNDS   rounds of host + ds (default 3)
#   BENCH_RUNTIME  fio runtime per run (default 10s)
#   BENCH_SIZE     fio file size (default 200M)
#   BENCH_PROFILE  profile whose job both sides run: database (default) or random_read
#   BENCH_DIR      the directory both sides use (default $CLUSTER_DIR/volumes/bench-benchmark)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

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
	kubectl delete pv "$name" --ignore-not-found --wait=false >/dev/null 2>&1 || true
	kubectl delete storageclass "$name" --ignore-not-found >/dev/null 2>&1 || true
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
kubectl apply -f - >/dev/null <<YAML
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: $name
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: v1
kind: PersistentVolume
metadata:
  name: $name
spec:
  capacity:
    storage: 10Gi
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: $name
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

provider_block="terraform {
  required_providers {
    clusterstorage = { source = \"clusterstorage/clusterstorage\" }
  }
}

provider \"clusterstorage\" {
  kubernetes {
    config_path = \"$KUBECONFIG\"
  }
}
"
mkdir -p "$work/ds" "$work/empty"
printf '%s' "$provider_block" >"$work/empty/main.tf"
cat >"$work/ds/main.tf" <<TF
$provider_block
data "clusterstorage_storage_benchmark" "bench" {
  storage_class     = "$name"
  node              = "$CLUSTERSTORAGE_NODE"
  image             = "$IMAGE"
  image_pull_policy = "Never"
  host_network      = true
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

# ds_run: the data source through `terraform plan` (which reads it); prints the same fields plus
# the plan's wall time.
ds_run() {
	local start end
	start=$(now)
	(cd "$work/ds" && "$ROOT/bin/terraform" plan -no-color -out=plan.out >"$work/ds.log" 2>&1) || {
		cat "$work/ds.log" >&2
		die "terraform plan failed"
	}
	end=$(now)
	(cd "$work/ds" && "$ROOT/bin/terraform" show -json plan.out) >"$work/plan.json"
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
	log "round $round: data source"
	d=$(ds_run)
	echo "$round $h $d" >>"$work/rows"
done

python3 - "$work/rows" "$baseline" <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
baseline = float(sys.argv[2])
med = statistics.median
print(f"{'round':>6} {'host r IOPS':>11} {'ds r IOPS':>10} {'ratio':>6} {'host r lat µs':>13} {'ds r lat µs':>12} {'ratio':>6}"
      f" {'host setup s':>12} {'ds setup s':>10} {'overhead s':>10}")
cols = {k: [] for k in ("iops", "lat", "host", "ds", "extra")}
for r in rows:
    n, hri, hrl, hwi, hwl, hrt, hwall, dri, drl, dwi, dwl, drt, dwall = r
    host_setup = hwall - hrt             # fio's own setup (laying out its file) beyond its runtime
    ds_setup = dwall - drt - baseline    # the same for the data source, net of terraform's own plan time
    extra = ds_setup - host_setup        # what the data source adds: claim, pod, log, cleanup
    for k, v in zip(cols, (dri / hri, drl / hrl, host_setup, ds_setup, extra)):
        cols[k].append(v)
    print(f"{int(n):>6} {hri:>11.0f} {dri:>10.0f} {dri / hri:>6.3f} {hrl:>13.0f} {drl:>12.0f} {drl / hrl:>6.3f}"
          f" {host_setup:>12.2f} {ds_setup:>10.2f} {extra:>10.2f}")
print(f"{'median':>6} {'':>11} {'':>10} {med(cols['iops']):>6.3f} {'':>13} {'':>12} {med(cols['lat']):>6.3f}"
      f" {med(cols['host']):>12.2f} {med(cols['ds']):>10.2f} {med(cols['extra']):>10.2f}")
print(f"ratios: data source / host. setup: wall time beyond fio's runtime (ds: net of the {baseline:.2f} s terraform plan takes without it).")
print(f"overhead: what the data source adds beyond fio's own setup (claim, pod, reading the log, cleanup).")
ok = abs(med(cols["iops"]) - 1) <= 0.05 and abs(med(cols["lat"]) - 1) <= 0.05
print(f"IOPS and latency within ±5 %: {'yes' if ok else 'no'}; overhead ≤ 3 s: {'yes' if med(cols['extra']) <= 3 else 'no'}")
PY
