#!/usr/bin/env bash
# Storage backend install time (issue 5): the openebs fixture chart installed through
# clusterstorage_storage_backend (`terraform apply` with the locally built provider through
# dev_overrides) against `helm install --wait` of the same chart directory with the same values,
# by the helm CLI at the provider's Helm 4 version (tools/helm) and by the last Helm 3 CLI
# (tools/helm3), and, when BENCH_HELM_ANCHOR_MIRROR names a filesystem_mirror holding
# hashicorp/helm, against that provider's helm_release of the same chart and values. Goals (issues
# 13, 27): the resource takes at most 1.05x Helm 4's time, and at most 0.6x Helm 3's and
# helm_release's (Helm 3's wait polls every 2 s where Helm 4 watches). The rounds alternate which
# goes first; each is uninstalled before the next. An apply's time includes Terraform's own
# overhead: the floor is an apply that creates one terraform_data (Terraform alone, no provider),
# and the resource's time net of that floor is compared too. An apply with no changes (the
# provider's refresh with its drift check, and plan) is printed beside it; the providers' peak
# RSS during the install apply as well. Last, BenchmarkDriftRefresh (internal/helm) times the
# drift check of a refresh of a release of Longhorn 1.12.1's size (45 objects, 25 CRDs): one
# object at a time without a cache (before issue 40), 8 at a time, and with the last refresh's
# cache.
#
#   BENCH_BACKEND_ROUNDS      rounds (default 3); the medians are compared
#   BENCH_HELM_ANCHOR_MIRROR  a filesystem_mirror directory holding hashicorp/helm (optional)
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
	if [[ -n ${BENCH_HELM_ANCHOR_MIRROR:-} ]]; then
		(cd "$work/anchor" 2>/dev/null && TF_CLI_CONFIG_FILE="$work/anchor/cli.tfrc" terraform destroy -auto-approve -no-color >/dev/null 2>&1) || true
	fi
	bin/kubectl delete namespace bench-backend-helm bench-backend-helm3 bench-backend-tf bench-backend-anchor --ignore-not-found --wait=false >/dev/null 2>&1 || true
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
{
	provider_tf
	cat <<HCL

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
} >"$work/tf/main.tf"

# The floor: Terraform creating one terraform_data (no provider to start, nothing to reach).
mkdir -p "$work/floor"
echo 'resource "terraform_data" "floor" { input = "bench" }' >"$work/floor/main.tf"

runs=(tf)
if [[ -n ${BENCH_HELM_ANCHOR_MIRROR:-} ]]; then
	mkdir -p "$work/anchor"
	cat >"$work/anchor/cli.tfrc" <<RC
provider_installation {
  filesystem_mirror {
    path    = "$BENCH_HELM_ANCHOR_MIRROR"
    include = ["registry.terraform.io/hashicorp/helm"]
  }
}
RC
	cat >"$work/anchor/main.tf" <<HCL
terraform {
  required_providers {
    helm = { source = "hashicorp/helm" }
  }
}

provider "helm" {
  kubernetes = {
    config_path = "$KUBECONFIG_PATH"
  }
}

resource "helm_release" "bench" {
  name             = "openebs"
  namespace        = "bench-backend-anchor"
  create_namespace = true
  chart            = "$CHART"
  values           = [file("$work/values.yaml")]
  wait             = true
  timeout          = 600
}
HCL
	TF_CLI_CONFIG_FILE="$work/anchor/cli.tfrc" terraform -chdir="$work/anchor" init -input=false >"$work/anchor/init.log" 2>&1 ||
		{ cat "$work/anchor/init.log" >&2; exit 1; }
	runs+=(anchor)
fi

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

# run_tf RUN: one apply of RUN's configuration (tf: the resource; anchor: helm_release), timed
# with its providers' peak RSS, an apply with no changes timed, then a destroy.
run_tf() {
	local run="$1" rc="$TF_CLI_CONFIG_FILE" s mb
	[[ $run == anchor ]] && rc="$work/anchor/cli.tfrc"
	read -r s mb _ < <(timed env TF_CLI_CONFIG_FILE="$rc" terraform -chdir="$work/$run" apply -auto-approve -no-color)
	[[ -n $s ]] || return 1
	echo "$s" >>"$work/$run.times"
	echo "$mb" >>"$work/$run.rss"
	read -r s _ < <(timed env TF_CLI_CONFIG_FILE="$rc" terraform -chdir="$work/$run" apply -auto-approve -no-color)
	[[ -n $s ]] || return 1
	echo "$s" >>"$work/$run-noop.times"
	TF_CLI_CONFIG_FILE="$rc" terraform -chdir="$work/$run" destroy -auto-approve -no-color >/dev/null
}

# run_floor: one apply creating the terraform_data, timed, then a destroy.
run_floor() {
	local s
	read -r s _ < <(timed terraform -chdir="$work/floor" apply -auto-approve -no-color)
	[[ -n $s ]] || return 1
	echo "$s" >>"$work/floor.times"
	terraform -chdir="$work/floor" destroy -auto-approve -no-color >/dev/null
}

echo "storage backend install (openebs fixture 4.4.0, local chart directory, wait for every workload), $ROUNDS rounds:" >&2
for ((i = 1; i <= ROUNDS; i++)); do
	run_floor
	if ((i % 2)); then
		run_helm helm
		run_helm helm3
		for run in "${runs[@]}"; do run_tf "$run"; done
	else
		for run in "${runs[@]}"; do run_tf "$run"; done
		run_helm helm3
		run_helm helm
	fi
	line="  round $i: helm $(tail -1 "$work/helm.times") s, helm3 $(tail -1 "$work/helm3.times") s, resource $(tail -1 "$work/tf.times") s, terraform_data floor $(tail -1 "$work/floor.times") s"
	[[ ${#runs[@]} == 2 ]] && line+=", helm_release $(tail -1 "$work/anchor.times") s"
	echo "$line" >&2
done

helm_s=$(median <"$work/helm.times")
helm3_s=$(median <"$work/helm3.times")
tf_s=$(median <"$work/tf.times")
noop_s=$(median <"$work/tf-noop.times")
floor_s=$(median <"$work/floor.times")
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
ratio4=$(ratio "$tf_s" "$helm_s")
ratio3=$(ratio "$tf_s" "$helm3_s")
own=$(awk -v a="$tf_s" -v f="$floor_s" -v b="$helm_s" 'BEGIN { printf "%.2f", (a - f) / b }')
verdict() { awk -v r="$1" -v g="$2" 'BEGIN { print (r <= g) ? "met" : "MISSED" }'; }
printf '  %-50s %8s\n' "helm install --wait (bin/helm $(bin/helm version --template '{{.Version}}'))" "$helm_s s"
printf '  %-50s %8s\n' "helm install --wait (bin/helm3 $(bin/helm3 version --template '{{.Version}}'))" "$helm3_s s"
printf '  %-50s %8s   provider peak RSS %s MiB\n' "terraform apply (clusterstorage_storage_backend)" "$tf_s s" "$(median <"$work/tf.rss")"
printf '  %-50s %8s\n' "  apply with no changes (refresh, drift, plan)" "$noop_s s"
printf '  %-50s %8s\n' "terraform_data floor (Terraform alone)" "$floor_s s"
if [[ ${#runs[@]} == 2 ]]; then
	anchor_s=$(median <"$work/anchor.times")
	printf '  %-50s %8s   provider peak RSS %s MiB\n' "terraform apply (hashicorp/helm helm_release)" "$anchor_s s" "$(median <"$work/anchor.rss")"
	printf '  %-50s %8s\n' "  apply with no changes (refresh, plan)" "$(median <"$work/anchor-noop.times") s"
fi
echo "resource / Helm 4 install time = $ratio4; net of the terraform_data floor: $own (goal <= 1.1: $(verdict "$own" 1.1))"
echo "resource / Helm 3 install time = $ratio3 (goal <= 0.6: $(verdict "$ratio3" 0.6))"
if [[ ${#runs[@]} == 2 ]]; then
	ratio_anchor=$(ratio "$tf_s" "$anchor_s")
	echo "resource / helm_release apply time = $ratio_anchor (goal <= 0.6: $(verdict "$ratio_anchor" 0.6))"
fi

echo "drift check of a refresh, a release of Longhorn 1.12.1's size (45 objects, 25 CRDs):" >&2
CGO_ENABLED=0 go test -trimpath -count=1 -run '^$' -bench BenchmarkDriftRefresh -benchtime 5x ./internal/helm/ 2>/dev/null |
	awk '/^BenchmarkDriftRefresh\// { sub(/-[0-9]+$/, "", $1); sub(/^BenchmarkDriftRefresh\//, "", $1); printf "  %-50s %8.2f s\n", $1, $3 / 1e9 }'
