#!/usr/bin/env bash
# make bench: measures the provider as users run it (terraform CLI, the locally built provider
# through dev_overrides, the local cluster) and prints small tables. Numbers from a 2-core VM
# vary with load; run it on a quiet machine and compare runs on the same machine.
#
#   BENCH_CLASSES  storage classes in the apply/plan benchmark (default 100)
#   BENCH_VOLUMES  local_pv resources on one node (default 50)
#   BENCH_EXTRAS   0 skips the benchmarks of scripts/bench-*.sh (fio overhead, k3s migration)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=scripts/lib.sh
source scripts/lib.sh

CLASSES="${BENCH_CLASSES:-100}"
VOLUMES="${BENCH_VOLUMES:-50}"

scripts/deps.sh
make --no-print-directory build bin/terraform >/dev/null
cluster_up
TF_CLI_CONFIG_FILE="$(scripts/devrc.sh)"
export TF_CLI_CONFIG_FILE CHECKPOINT_DISABLE=1 TF_IN_AUTOMATION=1

work="$(mktemp -d)"
trap 'cleanup_work "$work"; cluster_down_if_started' EXIT

# peak_rss runs a command and prints the provider process's peak resident memory (VmHWM, in
# MiB) while it ran, sampled from /proc every 50 ms.
peak_rss() {
	local peak=0 pid hwm
	"$@" >"$work/cmd.log" 2>&1 &
	local cmd=$!
	while kill -0 "$cmd" 2>/dev/null; do
		for pid in $(pgrep -f terraform-provider-clusterstorage || true); do
			hwm=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
			((hwm > peak)) && peak=$hwm
		done
		sleep 0.05
	done
	wait "$cmd" || { cat "$work/cmd.log" >&2; return 1; }
	echo $((peak / 1024))
}

timed() { # prints "seconds peakMiB"
	local t0 t1 mem
	t0=$(date +%s.%N)
	mem=$(peak_rss "$@")
	t1=$(date +%s.%N)
	printf '%.2f %s\n' "$(echo "$t1 - $t0" | bc)" "$mem"
}

echo "==> storage_class: $CLASSES classes" >&2
mkdir -p "$work/sc"
cat >"$work/sc/main.tf" <<TF
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
resource "clusterstorage_storage_class" "bench" {
  count       = $CLASSES
  name        = "bench-\${count.index}"
  storage_provisioner = "kubernetes.io/no-provisioner"
  labels      = { bench = "true" }
}
TF
read -r apply_s apply_mb < <(timed bin/terraform -chdir="$work/sc" apply -auto-approve -input=false)
read -r plan_s plan_mb < <(timed bin/terraform -chdir="$work/sc" plan -detailed-exitcode -input=false)
read -r destroy_s destroy_mb < <(timed bin/terraform -chdir="$work/sc" destroy -auto-approve -input=false)

printf '\n%-44s %10s %14s\n' "storage_class ($CLASSES resources)" "seconds" "provider MiB"
printf '%-44s %10s %14s\n' "terraform apply" "$apply_s" "$apply_mb"
printf '%-44s %10s %14s\n' "terraform plan (no changes)" "$plan_s" "$plan_mb"
printf '%-44s %10s %14s\n' "terraform destroy" "$destroy_s" "$destroy_mb"

echo "==> local_pv: $VOLUMES volumes on one node" >&2
BENCH_SSH_PORT="${BENCH_SSH_PORT:-22123}"
start_sshd "$work/ssh" "$BENCH_SSH_PORT"
trap 'stop_sshd "$work/ssh"; cleanup_work "$work"; cluster_down_if_started' EXIT
node="$(bin/kube kubectl --kubeconfig "$KUBECONFIG_PATH" get nodes -o 'jsonpath={.items[0].metadata.name}')"
mkdir -p "$work/pv"
cat >"$work/pv/main.tf" <<TF
terraform {
  required_providers {
    clusterstorage = { source = "clusterstorage/clusterstorage" }
  }
}
provider "clusterstorage" {
  kubernetes {
    config_path = "$KUBECONFIG_PATH"
  }
  ssh {
    user             = "$(id -un)"
    private_key_path = "$work/ssh/client_ed25519"
    known_hosts_path = "$work/ssh/known_hosts"
  }
  nodes = {
    "$node" = { host = "127.0.0.1", port = $BENCH_SSH_PORT }
  }
}
resource "clusterstorage_local_pv" "bench" {
  count                       = $VOLUMES
  name                        = "bench-pv-\${count.index}"
  node                        = "$node"
  path                        = "$work/disks/vol-\${count.index}"
  capacity                    = "1Gi"
  delete_directory_on_destroy = true
}
TF
logins() { grep -c "Accepted publickey" "$work/ssh/sshd.log" || true; }
before=$(logins)
read -r pv_apply_s pv_apply_mb < <(timed bin/terraform -chdir="$work/pv" apply -auto-approve -input=false)
apply_logins=$(( $(logins) - before ))
before=$(logins)
read -r pv_plan_s pv_plan_mb < <(timed bin/terraform -chdir="$work/pv" plan -input=false)
plan_logins=$(( $(logins) - before ))
read -r pv_destroy_s pv_destroy_mb < <(timed bin/terraform -chdir="$work/pv" destroy -auto-approve -input=false)

printf '\n%-44s %10s %14s %12s\n' "local_pv ($VOLUMES resources, one node)" "seconds" "provider MiB" "SSH logins"
printf '%-44s %10s %14s %12s\n' "terraform apply" "$pv_apply_s" "$pv_apply_mb" "$apply_logins"
printf '%-44s %10s %14s %12s\n' "terraform plan (no changes)" "$pv_plan_s" "$pv_plan_mb" "$plan_logins"
printf '%-44s %10s %14s\n' "terraform destroy" "$pv_destroy_s" "$pv_destroy_mb"

[[ "${BENCH_EXTRAS:-1}" == 1 ]] || exit 0
for extra in scripts/bench-*.sh; do
	[[ -x "$extra" ]] || continue
	echo "==> $extra" >&2
	"$extra"
done
