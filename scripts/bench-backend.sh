#!/usr/bin/env bash
# Storage backend install time (issue 5): the openebs fixture chart installed through
# clusterstorage_storage_backend (`terraform apply` with the locally built provider through
# dev_overrides) against `helm install --wait` of the same chart directory with the same values,
# by a helm CLI built from helm.sh/helm/v3 at the provider's version (tools/helm). Goal (issue 13):
# the resource takes at most 1.05x helm's time. The rounds alternate which goes first; each is
# uninstalled before the next. The apply time includes Terraform's own overhead (starting the
# provider, refresh, plan), which is printed separately as the time of an apply with no changes.
#
#   BENCH_BACKEND_ROUNDS  rounds (default 3); the medians are compared
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=scripts/lib.sh
source scripts/lib.sh

ROUNDS="${BENCH_BACKEND_ROUNDS:-3}"
CHART="$ROOT/internal/acctest/testdata/charts/openebs-4.4"
CLASS=bench-backend-hostpath

make --no-print-directory build bin/terraform >/dev/null
# The helm CLI, from its own module (never the provider's go.mod); rebuilt when tools/helm changes.
if [[ ! -x bin/helm || tools/helm/go.mod -nt bin/helm || tools/helm/go.sum -nt bin/helm ]]; then
	echo "building bin/helm from tools/helm (cold: a few minutes)" >&2
	(cd tools/helm && go build -trimpath -o "$ROOT/bin/helm" helm.sh/helm/v3/cmd/helm)
fi
cluster_up
TF_CLI_CONFIG_FILE="$(scripts/devrc.sh)"
export TF_CLI_CONFIG_FILE CHECKPOINT_DISABLE=1 TF_IN_AUTOMATION=1
export KUBECONFIG="$KUBECONFIG_PATH"
# helm's own state (repository cache, registry config) stays in the work directory.
work="$(mktemp -d)"
export HELM_CACHE_HOME="$work/helm/cache" HELM_CONFIG_HOME="$work/helm/config" HELM_DATA_HOME="$work/helm/data"

cleanup() {
	(cd "$work/tf" 2>/dev/null && terraform destroy -auto-approve -no-color >/dev/null 2>&1) || true
	bin/helm uninstall openebs -n bench-backend-helm --wait >/dev/null 2>&1 || true
	bin/kubectl delete namespace bench-backend-helm bench-backend-tf --ignore-not-found --wait=false >/dev/null 2>&1 || true
	cleanup_work "$work"
	cluster_down_if_started
}
trap cleanup EXIT

# The values the resource derives from its typed settings for openebs 4.4.x: the defaults, and no
# snapshot CRDs (below).
cat >"$work/values.yaml" <<YAML
engines:
  local:
    lvm: {enabled: false}
    zfs: {enabled: false}
  replicated:
    mayastor: {enabled: false}
loki: {enabled: false}
alloy: {enabled: false}
localpv-provisioner:
  hostpathClass:
    basePath: /var/openebs/local
    name: $CLASS
    isDefaultClass: false
openebs-crds:
  csi:
    volumeSnapshots: {enabled: false}
YAML

mkdir -p "$work/tf"
cat >"$work/tf/main.tf" <<HCL
terraform {
  required_providers {
    clusterstorage = { source = "clusterstorage/clusterstorage" }
  }
}

provider "clusterstorage" {
  kubernetes {
    config_path = "$KUBECONFIG_PATH"
  }
}

resource "clusterstorage_storage_backend" "bench" {
  type       = "openebs"
  namespace  = "bench-backend-tf"
  repository = ""
  chart      = "$CHART"
  version    = "4.4.0"
  openebs = {
    hostpath_class_name = "$CLASS"
    # The chart keeps its snapshot CRDs on uninstall (helm.sh/resource-policy: keep), so the
    # next round's install of the other side would find them owned by this one: neither side
    # installs them.
    volume_snapshot_crds = false
  }
}
HCL

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f\n", b - a }'; }
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

run_helm() {
	local t
	t=$(now)
	bin/helm install openebs "$CHART" -n bench-backend-helm --create-namespace -f "$work/values.yaml" --wait --timeout 10m >"$work/helm.log" 2>&1 ||
		{ cat "$work/helm.log" >&2; return 1; }
	since "$t" >>"$work/helm.times"
	bin/helm uninstall openebs -n bench-backend-helm --wait >/dev/null
}

run_tf() {
	local t
	t=$(now)
	(cd "$work/tf" && terraform apply -auto-approve -no-color >"$work/tf.log" 2>&1) || { cat "$work/tf.log" >&2; return 1; }
	since "$t" >>"$work/tf.times"
	t=$(now)
	(cd "$work/tf" && terraform apply -auto-approve -no-color >"$work/tf-noop.log" 2>&1) || { cat "$work/tf-noop.log" >&2; return 1; }
	since "$t" >>"$work/noop.times"
	(cd "$work/tf" && terraform destroy -auto-approve -no-color >/dev/null)
}

echo "storage backend install (openebs fixture 4.4.0, local chart directory, wait for every workload), $ROUNDS rounds:" >&2
for ((i = 1; i <= ROUNDS; i++)); do
	if ((i % 2)); then run_helm; run_tf; else run_tf; run_helm; fi
	echo "  round $i: helm $(tail -1 "$work/helm.times") s, resource $(tail -1 "$work/tf.times") s" >&2
done

helm_s=$(median <"$work/helm.times")
tf_s=$(median <"$work/tf.times")
noop_s=$(median <"$work/noop.times")
ratio=$(awk -v a="$tf_s" -v b="$helm_s" 'BEGIN { printf "%.2f", a / b }')
own=$(awk -v a="$tf_s" -v n="$noop_s" -v b="$helm_s" 'BEGIN { printf "%.2f", (a - n) / b }')
verdict=$(awk -v r="$ratio" 'BEGIN { print (r <= 1.05) ? "met" : "MISSED" }')
printf '  %-50s %8s\n' "helm install --wait (bin/helm $(bin/helm version --template '{{.Version}}'))" "$helm_s s"
printf '  %-50s %8s\n' "terraform apply (clusterstorage_storage_backend)" "$tf_s s"
printf '  %-50s %8s\n' "  of which Terraform overhead (no-op apply)" "$noop_s s"
echo "resource / helm install time = $ratio (goal <= 1.05: $verdict); without Terraform's overhead: $own"
