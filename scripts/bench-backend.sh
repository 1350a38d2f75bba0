#!/usr/bin/env bash
# Storage backend install time (issues 5, 40): the openebs fixture chart installed through
# clusterstorage_storage_backend (`terraform apply` with the provider built from this tree into the
# work directory, through dev_overrides) against `helm install --wait` of the same chart directory
# with the same values, by the helm CLI at the provider's Helm 4 version (tools/helm) and by the
# last Helm 3 CLI (tools/helm3), and, when a hashicorp/helm provider is given, against its
# helm_release of the same chart and values. Goals (issue 40): net of the floor, the install takes
# at most 1.1x Helm 4's time and at most 0.6x helm_release's, and the refresh of the unchanged
# release (an apply with no changes) at most 0.5x helm_release's. The rounds alternate which goes
# first; each is uninstalled before the next. An apply's time includes Terraform's own overhead:
# the floor is an apply that creates one terraform_data (Terraform alone, no provider), and its
# apply with no changes is the floor of the refresh. The providers' peak RSS during the install
# apply is printed too. Then one more install apply, logged (Terraform's core at TRACE, the
# provider at DEBUG, the SDK's logs off), is split into where its time went: the provider's process
# starts, the plan and apply calls, and the provider's own steps (its Debug lines "storage backend
# step" and Helm's); so is helm_release's. Last, BenchmarkDriftRefresh (internal/helm) times the
# drift check of a refresh of a release of Longhorn 1.12.1's size (45 objects, 25 CRDs): one object
# at a time without a cache (before issue 40), 8 at a time, with the install's own cache (the first
# refresh after an apply), and with the last refresh's cache.
#
#   BENCH_BACKEND_ROUNDS      rounds (default 3); the medians are compared
#   ANCHOR_HELM_PROVIDER      a hashicorp/helm provider binary (terraform-provider-helm, built
#                             outside this repository from its public source; DEVELOPMENT.md says
#                             how); without it (or BENCH_HELM_ANCHOR_MIRROR) that comparison is
#                             skipped
#   ANCHOR_HELM_VERSION       its version (default: the file name's _vX.Y.Z, else 3.1.2)
#   BENCH_HELM_ANCHOR_MIRROR  instead: a filesystem_mirror directory holding hashicorp/helm
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=scripts/lib.sh
source scripts/lib.sh

ROUNDS="${BENCH_BACKEND_ROUNDS:-3}"
CHART="$ROOT/internal/acctest/testdata/charts/openebs-4.4"
CLASS=bench-backend-hostpath

# The helm CLIs come from modules of their own (never the provider's go.mod). The provider is
# built into the work directory: others may be using bin/.
work="$(mktemp -d)"
make --no-print-directory build bin/terraform bin/helm bin/helm3 PROVIDER_BIN="$work/bin/terraform-provider-clusterstorage" >/dev/null
cluster_up
cat >"$work/ours.tfrc" <<RC
provider_installation {
  dev_overrides {
    "registry.terraform.io/clusterstorage/clusterstorage" = "$work/bin"
  }
  direct {}
}
RC
export TF_CLI_CONFIG_FILE="$work/ours.tfrc" CHECKPOINT_DISABLE=1 TF_IN_AUTOMATION=1
export KUBECONFIG="$KUBECONFIG_PATH"
# helm's own state (repository cache, registry config) stays in the work directory.
export HELM_CACHE_HOME="$work/helm/cache" HELM_CONFIG_HOME="$work/helm/config" HELM_DATA_HOME="$work/helm/data"
load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "load average at the start: $(load)" >&2

cleanup() {
	(cd "$work/tf" 2>/dev/null && terraform destroy -auto-approve -no-color >/dev/null 2>&1) || true
	bin/helm uninstall openebs -n bench-backend-helm --wait >/dev/null 2>&1 || true
	bin/helm3 uninstall openebs -n bench-backend-helm3 --wait >/dev/null 2>&1 || true
	if [[ -f $work/anchor/cli.tfrc ]]; then
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
  # The destroy guard refuses while any claim of openebs.io/local exists on the cluster, another
  # test's too; this release serves none of them.
  force_destroy = true
}
HCL
} >"$work/tf/main.tf"

# The floor: Terraform creating one terraform_data (no provider to start, nothing to reach).
mkdir -p "$work/floor"
echo 'resource "terraform_data" "floor" { input = "bench" }' >"$work/floor/main.tf"

runs=(tf)
mirror="${BENCH_HELM_ANCHOR_MIRROR:-}"
if [[ -n ${ANCHOR_HELM_PROVIDER:-} ]]; then
	[[ -x $ANCHOR_HELM_PROVIDER ]] || { echo "ANCHOR_HELM_PROVIDER=$ANCHOR_HELM_PROVIDER is not an executable" >&2; exit 1; }
	version="${ANCHOR_HELM_VERSION:-}"
	if [[ -z $version && $(basename "$ANCHOR_HELM_PROVIDER") =~ _v([0-9]+\.[0-9]+\.[0-9]+)$ ]]; then
		version="${BASH_REMATCH[1]}"
	fi
	version="${version:-3.1.2}"
	# A filesystem mirror laid out as a registry install would be: init takes the provider from it.
	mirror="$work/anchor-mirror"
	mkdir -p "$mirror/registry.terraform.io/hashicorp/helm/$version/linux_amd64"
	cp "$ANCHOR_HELM_PROVIDER" "$mirror/registry.terraform.io/hashicorp/helm/$version/linux_amd64/terraform-provider-helm_v$version"
fi
if [[ -n $mirror ]]; then
	mkdir -p "$work/anchor"
	cat >"$work/anchor/cli.tfrc" <<RC
provider_installation {
  filesystem_mirror {
    path    = "$mirror"
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

# run_floor: one apply creating the terraform_data, timed, an apply with no changes timed, then a
# destroy.
run_floor() {
	local s
	read -r s _ < <(timed terraform -chdir="$work/floor" apply -auto-approve -no-color)
	[[ -n $s ]] || return 1
	echo "$s" >>"$work/floor.times"
	read -r s _ < <(timed terraform -chdir="$work/floor" apply -auto-approve -no-color)
	[[ -n $s ]] || return 1
	echo "$s" >>"$work/floor-noop.times"
	terraform -chdir="$work/floor" destroy -auto-approve -no-color >/dev/null
}

# split RUN: one more install apply and an apply with no changes of RUN's configuration, logged
# (Terraform's core at TRACE; the provider at DEBUG with the SDK's logs off), then a destroy; prints
# where each one's time went (split.awk).
split() {
	local run="$1" rc="$TF_CLI_CONFIG_FILE" what
	[[ $run == anchor ]] && rc="$work/anchor/cli.tfrc"
	for what in install no-changes; do
		TF_LOG_CORE=TRACE TF_LOG_PROVIDER=DEBUG TF_LOG_SDK=off TF_LOG_SDK_PROTO=off TF_LOG_SDK_FRAMEWORK=off \
			TF_LOG_PATH="$work/$run-$what.log" TF_CLI_CONFIG_FILE="$rc" terraform -chdir="$work/$run" apply -auto-approve -no-color >"$work/cmd.log" 2>&1 ||
			{ cat "$work/cmd.log" >&2; return 1; }
		echo "  $what:"
		awk -f "$work/split.awk" "$work/$run-$what.log"
	done
	TF_CLI_CONFIG_FILE="$rc" terraform -chdir="$work/$run" destroy -auto-approve -no-color >/dev/null
}

# split.awk reads a Terraform log (TF_LOG_CORE=TRACE, TF_LOG_PROVIDER=DEBUG) and sums the time of:
# each provider process from its start to its first call; each PlanResourceChange and
# ApplyResourceChange call; inside the apply, the provider's "storage backend step" lines (their
# ms) and Helm's phases (from its log lines: rendering and checks before the first object is
# applied, applying the objects, the wait, recording the release). Timestamps are
# 2026-12-06T09:49:29.936Z.
cat >"$work/split.awk" <<'AWK'
function ts(line,   t) { t = substr(line, 12, 12); return substr(t, 1, 2) * 3600 + substr(t, 4, 2) * 60 + substr(t, 7) }
function add(name, secs) { if (!(name in sum)) order[++n] = name; sum[name] += secs }
function field(line, key,   s) {
	if (!match(line, key "=(\"[^\"]*\"|[^ \t]*)")) return ""
	s = substr(line, RSTART + length(key) + 1, RLENGTH - length(key) - 1); gsub(/"/, "", s); return s
}
/^[0-9][0-9][0-9][0-9]-/ { t = ts($0); if (first == "") first = t; last = t }
/provider: plugin started/ { started = t; starts++ }
/GRPCProvider(\.v6)?: [A-Za-z]+$/ && started != "" { add("provider process starts", t - started); started = "" }
/GRPCProvider(\.v6)?: PlanResourceChange$/ { plan = t }
/GRPCProvider(\.v6)?: [A-Za-z]+$/ && !/PlanResourceChange$/ && plan != "" { add("plan (PlanResourceChange)", t - plan); plan = "" }
/GRPCProvider(\.v6)?: ReadResource$/ { read = t }
/GRPCProvider(\.v6)?: [A-Za-z]+$/ && !/ReadResource$/ && read != "" { add("refresh (ReadResource)", t - read); read = "" }
/GRPCProvider(\.v6)?: ApplyResourceChange$/ { apply = t }
/helm install .* in namespace/ { helm = t }
/creating resource\(s\)/ && helm != "" { add("    helm: render, checks (before the first apply)", t - helm); helm = ""; applying = t }
/waiting for resources/ && applying != "" { add("    helm: apply the objects", t - applying); applying = ""; waiting = t }
/all resources achieved desired status/ && waiting != "" { add("    helm: wait until ready", t - waiting); waiting = ""; recorded = t }
/storage backend step/ {
	s = field($0, "step")
	if (s == "helm install" && recorded != "") { add("    helm: record the release", t - recorded); recorded = "" }
	add("  " s, field($0, "ms") / 1000)
}
/GRPCProvider(\.v6)?: Close$/ && apply != "" { add("apply (ApplyResourceChange)", t - apply); apply = "" }
END {
	for (i = 1; i <= n; i++) {
		name = order[i]
		if (name == "provider process starts") name = name " (" starts ")"
		printf "    %-52s %6.3f s\n", name, sum[order[i]]
	}
	printf "    %-52s %6.3f s\n", "the whole apply (first to last log line)", last - first
}
AWK

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
floor_noop_s=$(median <"$work/floor-noop.times")
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
net() { awk -v a="$1" -v f="$2" -v b="$3" -v g="$4" 'BEGIN { printf "%.2f", (a - f) / (b - g) }'; }
verdict() { awk -v r="$1" -v g="$2" 'BEGIN { print (r <= g) ? "met" : "MISSED" }'; }
echo "load average at the end: $(load)" >&2
printf '  %-50s %8s\n' "helm install --wait (bin/helm $(bin/helm version --template '{{.Version}}'))" "$helm_s s"
printf '  %-50s %8s\n' "helm install --wait (bin/helm3 $(bin/helm3 version --template '{{.Version}}'))" "$helm3_s s"
printf '  %-50s %8s   provider peak RSS %s MiB\n' "terraform apply (clusterstorage_storage_backend)" "$tf_s s" "$(median <"$work/tf.rss")"
printf '  %-50s %8s\n' "  apply with no changes (refresh, drift, plan)" "$noop_s s"
printf '  %-50s %8s\n' "terraform_data floor (Terraform alone)" "$floor_s s"
printf '  %-50s %8s\n' "  apply with no changes" "$floor_noop_s s"
if [[ ${#runs[@]} == 2 ]]; then
	anchor_s=$(median <"$work/anchor.times")
	anchor_noop_s=$(median <"$work/anchor-noop.times")
	printf '  %-50s %8s   provider peak RSS %s MiB\n' "terraform apply (hashicorp/helm helm_release)" "$anchor_s s" "$(median <"$work/anchor.rss")"
	printf '  %-50s %8s\n' "  apply with no changes (refresh, plan)" "$anchor_noop_s s"
fi
own=$(net "$tf_s" "$floor_s" "$helm_s" 0)
echo "resource / Helm 4 install time = $(ratio "$tf_s" "$helm_s"); net of the terraform_data floor: $own (goal <= 1.1: $(verdict "$own" 1.1))"
echo "resource / Helm 3 install time = $(ratio "$tf_s" "$helm3_s")"
if [[ ${#runs[@]} == 2 ]]; then
	install=$(net "$tf_s" "$floor_s" "$anchor_s" "$floor_s")
	refresh=$(net "$noop_s" "$floor_noop_s" "$anchor_noop_s" "$floor_noop_s")
	echo "resource / helm_release install = $(ratio "$tf_s" "$anchor_s"); net of the floor: $install (goal <= 0.6: $(verdict "$install" 0.6))"
	echo "resource / helm_release refresh of the unchanged release (apply with no changes) = $(ratio "$noop_s" "$anchor_noop_s"); net of the floor: $refresh (goal <= 0.5: $(verdict "$refresh" 0.5))"
else
	echo "resource / helm_release: skipped (set ANCHOR_HELM_PROVIDER to a hashicorp/helm provider binary; DEVELOPMENT.md says how to build one)"
fi

echo "where the time went, one more run of each (logged; the log slows it):" >&2
for run in "${runs[@]}"; do
	[[ $run == tf ]] && echo "  clusterstorage_storage_backend" || echo "  hashicorp/helm helm_release"
	split "$run"
done

echo "drift check of a refresh, a release of Longhorn 1.12.1's size (45 objects, 25 CRDs):" >&2
CGO_ENABLED=0 go test -trimpath -count=1 -run '^$' -bench BenchmarkDriftRefresh -benchtime 5x ./internal/helm/ 2>/dev/null |
	awk '/^BenchmarkDriftRefresh\// { sub(/-[0-9]+$/, "", $1); sub(/^BenchmarkDriftRefresh\//, "", $1); printf "  %-50s %8.2f s\n", $1, $3 / 1e9 }'
