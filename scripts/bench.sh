#!/usr/bin/env bash
# make bench: measures the provider as users run it (terraform CLI, the locally built provider
# through dev_overrides, the local cluster) and prints small tables. Numbers from a 2-core VM
# vary with load; run it on a quiet machine and compare runs on the same machine.
#
#   BENCH_OBJECTS        storage classes, and as many local_pv without directories, in the
#                        apply/plan/destroy benchmark (default 100 each)
#   BENCH_ROUNDS         rounds of that benchmark; medians are printed (default 3)
#   BENCH_CLI            the CLI to run (default bin/terraform; bin/tofu works too)
#   BENCH_ANCHOR_MIRROR  a filesystem_mirror directory holding hashicorp/kubernetes: the same
#                        objects are then also made through it (kubernetes_storage_class_v1,
#                        kubernetes_persistent_volume_v1) and the table shows the ratios. The
#                        project never builds or ships that provider; see DEVELOPMENT.md (Performance).
#   BENCH_ONLY           "objects" runs only that benchmark, "volumes" only the next one
#   BENCH_VOLUMES        local_pv resources on one node, with directories over SSH and without
#                        (default 100)
#   BENCH_EXTRAS         0 skips the benchmarks of scripts/bench-*.sh (fio overhead, k3s migration)
#   BENCH_SUMMARY        a file the objects benchmark writes its medians to, one "RUN OP SECONDS"
#                        line each (scripts/bench-load.sh reads it)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=scripts/lib.sh
source scripts/lib.sh

OBJECTS="${BENCH_OBJECTS:-100}"
ROUNDS="${BENCH_ROUNDS:-3}"
CLI="${BENCH_CLI:-$ROOT/bin/terraform}"
VOLUMES="${BENCH_VOLUMES:-100}"

work="$(mktemp -d)"
bench_build "$work"
destroy_left() { bench_destroy_left "$CLI" "$work"/*/; }
trap 'destroy_left; cleanup_work "$work"; cluster_down_if_started' EXIT

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
med() { median <"$work/$1.$2"; }

node="$(bin/kube kubectl --kubeconfig "$KUBECONFIG_PATH" get nodes -o 'jsonpath={.items[0].metadata.name}')"
prefix="bench-$(printf '%04x%04x' $RANDOM $RANDOM)"

if [[ "${BENCH_ONLY:-}" != volumes ]]; then
# --- Objects: OBJECTS storage classes + OBJECTS local PVs without directories, against the floor
# (2*OBJECTS terraform_data, Terraform alone) and, when BENCH_ANCHOR_MIRROR names a
# filesystem_mirror holding hashicorp/kubernetes, the same shape through that provider.
mkdir -p "$work/ours" "$work/floor"
bench_objects_tf "$OBJECTS" "$prefix" "$node" >"$work/ours/main.tf"
cat >"$work/floor/main.tf" <<TF
resource "terraform_data" "bench" {
  count = $((2 * OBJECTS))
  input = "$prefix-\${count.index}"
}
TF
# sized is the floor with each object's state as large as ours' (terraform_data whose input is
# padded; written once ours and the floor have applied): Terraform's own cost grows with the
# state's size, so this is the CLI alone for a state the size of ours.
mkdir -p "$work/sized"
runs=(ours floor sized)
if [[ -n "${BENCH_ANCHOR_MIRROR:-}" ]]; then
	mkdir -p "$work/anchor"
	bench_anchor_rc "$work/anchor/cli.tfrc"
	echo "$work/anchor/cli.tfrc" >"$work/anchor/cli.path"
	bench_anchor_tf "$OBJECTS" "$prefix" "$node" >"$work/anchor/main.tf"
	TF_CLI_CONFIG_FILE="$work/anchor/cli.tfrc" "$CLI" -chdir="$work/anchor" init -input=false >"$work/anchor/init.log" 2>&1 ||
		{ cat "$work/anchor/init.log" >&2; exit 1; }
	runs+=(anchor)
fi

# cli RUN ARGS... runs the CLI in RUN's directory with RUN's CLI configuration. Through env, so
# that the CLI is the process peak_rss starts and the providers are its children.
cli() {
	local run=$1 rc=$TF_CLI_CONFIG_FILE
	shift
	[[ $run == anchor ]] && rc="$work/anchor/cli.tfrc"
	timed env TF_CLI_CONFIG_FILE="$rc" "$CLI" -chdir="$work/$run" "$@"
}

# write_sized writes the sized floor: 2*OBJECTS terraform_data whose input is padded so that the
# state is as large as ours' (both states as measured after their first apply).
write_sized() {
	local pad
	pad=$((($(cat "$work/ours.statesize") - $(cat "$work/floor.statesize")) / (2 * OBJECTS)))
	((pad > 0)) || pad=0
	cat >"$work/sized/main.tf" <<TF
resource "terraform_data" "bench" {
  count = $((2 * OBJECTS))
  input = "$prefix-\${count.index}-$(head -c "$pad" /dev/zero | tr '\0' x)"
}
TF
	echo "==> the sized floor: each terraform_data's input padded by $pad characters" >&2
}

# The rounds interleave the runs, so that load from elsewhere on the machine falls on all of them.
for ((round = 1; round <= ROUNDS; round++)); do
	for run in "${runs[@]}"; do
		echo "==> objects round $round/$ROUNDS: $run" >&2
		[[ $run == sized && ! -f $work/sized/main.tf ]] && write_sized
		read -r s _ < <(cli "$run" apply -auto-approve -input=false)
		echo "$s" >>"$work/$run.apply"
		[[ -f $work/$run/terraform.tfstate ]] && stat -c %s "$work/$run/terraform.tfstate" >"$work/$run.statesize"
		read -r s mb anon < <(cli "$run" plan -detailed-exitcode -input=false)
		echo "$s" >>"$work/$run.plan"
		echo "$mb" >>"$work/$run.rss"
		echo "$anon" >>"$work/$run.anon"
		read -r s _ < <(cli "$run" destroy -auto-approve -input=false)
		echo "$s" >>"$work/$run.destroy"
	done
done

ratio() { [[ -s $work/anchor.$2 ]] && printf '%.2fx' "$(bc -l <<<"$(med "$1" "$2") / $(med anchor "$2")")" || echo -; }
printf '\n%s: %d storage classes + %d local PVs (create_directory = false), %s, medians of %d rounds\n' \
	"objects" "$OBJECTS" "$OBJECTS" "$("$CLI" version | head -1)" "$ROUNDS"
printf '%-28s %14s %22s %8s %18s\n' "" "clusterstorage" "hashicorp/kubernetes" "ratio" "floor (CLI alone)"
for what in apply plan destroy rss anon; do
	case $what in
	apply) label="apply (s)" ;;
	plan) label="no-change plan (s)" ;;
	destroy) label="destroy (s)" ;;
	rss) label="provider peak RSS (MiB)" ;;
	anon) label="  of it anonymous (MiB)" ;;
	esac
	anchor=-
	[[ -s $work/anchor.$what ]] && anchor=$(med anchor "$what")
	floor=-
	[[ $what != rss && $what != anon ]] && floor=$(med floor "$what")
	printf '%-28s %14s %22s %8s %18s\n' "$label" "$(med ours "$what")" "$anchor" "$(ratio ours "$what")" "$floor"
done
if [[ -n ${BENCH_SUMMARY:-} ]]; then
	for run in "${runs[@]}"; do
		for what in apply plan destroy; do
			echo "$run $what $(med "$run" "$what")"
		done
	done >"$BENCH_SUMMARY"
fi
printf '(rounds: ours apply %s; plan %s; destroy %s)\n' "$(paste -sd/ "$work/ours.apply")" "$(paste -sd/ "$work/ours.plan")" "$(paste -sd/ "$work/ours.destroy")"
fi
[[ "${BENCH_ONLY:-}" == objects ]] && exit 0

# --- Volumes: VOLUMES local PVs whose directories the provider makes and removes over SSH on one
# node, against the same VOLUMES without directories through the same provider configuration
# (issue 13's goal: apply at most 2x, plan at most 1.5x), in interleaved rounds.
echo "==> local_pv: $VOLUMES volumes on one node, with and without directories" >&2
BENCH_SSH_PORT="${BENCH_SSH_PORT:-22123}"
start_sshd "$work/ssh" "$BENCH_SSH_PORT"
trap 'destroy_left; stop_sshd "$work/ssh"; cleanup_work "$work"; cluster_down_if_started' EXIT
# volumes_tf RUN DIRECTORIES: the configuration of RUN (dirs or nodirs).
volumes_tf() {
	local run=$1 dirs=$2
	mkdir -p "$work/$run"
	cat >"$work/$run/main.tf" <<TF
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
  name                        = "$prefix-$run-\${count.index}"
  node                        = "$node"
  path                        = "$work/disks/$run-\${count.index}"
  capacity                    = "1Gi"
  create_directory            = $dirs
  delete_directory_on_destroy = $dirs
}
TF
}
volumes_tf dirs true
volumes_tf nodirs false
logins() { grep -c "Accepted publickey" "$work/ssh/sshd.log" || true; }
for ((round = 1; round <= ROUNDS; round++)); do
	for run in dirs nodirs; do
		echo "==> volumes round $round/$ROUNDS: $run" >&2
		for op in apply plan destroy; do
			args=(-auto-approve -input=false)
			[[ $op == plan ]] && args=(-detailed-exitcode -input=false)
			before=$(logins)
			read -r s mb _ < <(timed "$CLI" -chdir="$work/$run" "$op" "${args[@]}")
			echo "$s" >>"$work/$run.$op"
			echo "$mb" >>"$work/$run.$op-rss"
			echo $(($(logins) - before)) >>"$work/$run.$op-logins"
		done
	done
done

vratio() { printf '%.2fx' "$(bc -l <<<"$(med dirs "$1") / $(med nodirs "$1")")"; }
printf '\nlocal_pv: %d volumes on one node, %s, medians of %d rounds\n' "$VOLUMES" "$("$CLI" version | head -1)" "$ROUNDS"
printf '%-24s %16s %16s %8s %6s %14s %12s\n' "" "with directories" "without" "ratio" "goal" "provider MiB" "SSH logins"
for op in apply plan destroy; do
	goal=-
	case $op in apply) goal="2x" ;; plan) goal="1.5x" ;; esac
	printf '%-24s %16s %16s %8s %6s %14s %12s\n' "$op (s)" "$(med dirs "$op")" "$(med nodirs "$op")" "$(vratio "$op")" "$goal" \
		"$(med dirs "$op-rss")" "$(med dirs "$op-logins")"
done
printf '(rounds with directories: apply %s; plan %s; destroy %s)\n' "$(paste -sd/ "$work/dirs.apply")" "$(paste -sd/ "$work/dirs.plan")" "$(paste -sd/ "$work/dirs.destroy")"

[[ "${BENCH_EXTRAS:-1}" == 1 && -z "${BENCH_ONLY:-}" ]] || exit 0
for extra in scripts/bench-*.sh; do
	[[ -x "$extra" ]] || continue
	echo "==> $extra" >&2
	"$extra"
done
