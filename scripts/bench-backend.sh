#!/usr/bin/env bash
# Storage backend install time (issue 5): the openebs fixture chart installed through
# clusterstorage_storage_backend (`terraform apply` with the locally built provider through
# dev_overrides) against `helm install --wait` of the same chart directory with the same values,
# by the helm CLI at the provider's Helm 4 version (tools/helm) and by the last Helm 3 CLI
# (tools/helm3). Goals (issues 13, 27): the resource takes at most 1.05x Helm 4's time, and at most
# 0.6x Helm 3's (whose wait polls every 2 s where Helm 4 watches). The rounds alternate which goes first; each is
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

# The helm CLIs come from modules of their own (never the provider's go.mod).
make --no-print-directory build bin/terraform bin/helm bin/helm3 >/dev/null
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
	bin/helm3 uninstall openebs -n bench-backend-helm3 --wait >/dev/null 2>&1 || true
	bin/kubectl delete namespace bench-backend-helm bench-backend-helm3 bench-backend-tf --ignore-not-found --wait=false >/dev/null 2>&1 || true
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

# run_helm CLI: one `helm install --wait` by bin/CLI (helm or helm3), timed, then uninstalled.
run_helm() {
	local cli="$1" t
	t=$(now)
	"bin/$cli" install openebs "$CHART" -n "bench-backend-$cli" --create-namespace -f "$work/values.yaml" --wait --timeout 10m >"$work/$cli.log" 2>&1 ||
		{ cat "$work/$cli.log" >&2; return 1; }
	since "$t" >>"$work/$cli.times"
	"bin/$cli" uninstall openebs -n "bench-backend-$cli" --wait >/dev/null
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
	if ((i % 2)); then run_helm helm; run_helm helm3; run_tf; else run_tf; run_helm helm3; run_helm helm; fi
	echo "  round $i: helm $(tail -1 "$work/helm.times") s, helm3 $(tail -1 "$work/helm3.times") s, resource $(tail -1 "$work/tf.times") s" >&2
done

helm_s=$(median <"$work/helm.times")
helm3_s=$(median <"$work/helm3.times")
tf_s=$(median <"$work/tf.times")
noop_s=$(median <"$work/noop.times")
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
ratio4=$(ratio "$tf_s" "$helm_s")
ratio3=$(ratio "$tf_s" "$helm3_s")
own=$(awk -v a="$tf_s" -v n="$noop_s" -v b="$helm_s" 'BEGIN { printf "%.2f", (a - n) / b }')
verdict() { awk -v r="$1" -v g="$2" 'BEGIN { print (r <= g) ? "met" : "MISSED" }'; }
printf '  %-50s %8s\n' "helm install --wait (bin/helm $(bin/helm version --template '{{.Version}}'))" "$helm_s s"
printf '  %-50s %8s\n' "helm install --wait (bin/helm3 $(bin/helm3 version --template '{{.Version}}'))" "$helm3_s s"
printf '  %-50s %8s\n' "terraform apply (clusterstorage_storage_backend)" "$tf_s s"
printf '  %-50s %8s\n' "  of which Terraform overhead (no-op apply)" "$noop_s s"
echo "resource / Helm 4 install time = $ratio4 (goal <= 1.05: $(verdict "$ratio4" 1.05)); without Terraform's overhead: $own"
echo "resource / Helm 3 install time = $ratio3 (goal <= 0.6: $(verdict "$ratio3" 0.6))"
