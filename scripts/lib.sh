# shellcheck shell=bash
# Shared by the scripts in scripts/: starting the local cluster when none is given, and stopping
# what was started.

: "${ROOT:?ROOT must be set}"
export PATH="$ROOT/bin:$PATH"
# shellcheck source=tools/sshd-config.sh
source "$ROOT/tools/sshd-config.sh"
STARTED_CLUSTER=""

# cluster_up sets KUBECONFIG_PATH: CLUSTERSTORAGE_ACC_KUBECONFIG when set, else the local
# cluster, started when it is not running (and then stopped again by cluster_down_if_started).
# shellcheck disable=SC2034 # KUBECONFIG_PATH is read by the scripts that source this file
cluster_up() {
	if [[ -n "${CLUSTERSTORAGE_ACC_KUBECONFIG:-}" ]]; then
		KUBECONFIG_PATH="$CLUSTERSTORAGE_ACC_KUBECONFIG"
		return
	fi
	if ! "$ROOT/tools/kube/cluster.sh" status >/dev/null 2>&1; then
		STARTED_CLUSTER=1
	fi
	KUBECONFIG_PATH="$("$ROOT/tools/kube/cluster.sh" up | tail -1)"
}

cluster_down_if_started() {
	if [[ -n "$STARTED_CLUSTER" ]]; then
		"$ROOT/tools/kube/cluster.sh" down
	fi
}

# provider_tf [LINES] prints the terraform and provider blocks of a configuration for the locally
# built provider (scripts/devrc.sh's dev_overrides) on the cluster at KUBECONFIG_PATH; LINES (an
# ssh block, nodes) go into the provider block after its kubernetes block.
# shellcheck disable=SC2120 # scripts/bench-migration.sh passes LINES
provider_tf() {
	cat <<HCL
terraform {
  required_providers {
    clusterstorage = { source = "clusterstorage/clusterstorage" }
  }
}

provider "clusterstorage" {
  kubernetes {
    config_path = "$KUBECONFIG_PATH"
  }
HCL
	if [[ -n "${1:-}" ]]; then
		printf '%s\n' "$1"
	fi
	echo "}"
}

# bench_build WORK: what the objects benchmarks (scripts/bench.sh, scripts/bench-memory.sh) start
# from: the Debian packages, bin/terraform, the provider built as released into WORK/bin (a
# directory of their own: others may be using bin/), WORK/ours.tfrc (dev_overrides for that
# build), set as TF_CLI_CONFIG_FILE, and the cluster (cluster_up).
bench_build() {
	local work=$1
	"$ROOT/scripts/deps.sh"
	make --no-print-directory -C "$ROOT" bin/terraform build PROVIDER_BIN="$work/bin/terraform-provider-clusterstorage" >/dev/null
	cat >"$work/ours.tfrc" <<RC
provider_installation {
  dev_overrides {
    "registry.terraform.io/clusterstorage/clusterstorage" = "$work/bin"
    "registry.opentofu.org/clusterstorage/clusterstorage" = "$work/bin"
  }
  direct {}
}
RC
	export TF_CLI_CONFIG_FILE="$work/ours.tfrc" CHECKPOINT_DISABLE=1 TF_IN_AUTOMATION=1
	cluster_up
}

# bench_destroy_left CLI DIR...: destroys what a failed run left in the cluster in each DIR that
# holds a state (runs destroy their own objects), with DIR/cli.path's CLI configuration when it
# has one.
bench_destroy_left() {
	local cli=$1 dir
	shift
	for dir in "$@"; do
		[[ -s $dir/terraform.tfstate ]] || continue
		TF_CLI_CONFIG_FILE="$(cat "$dir/cli.path" 2>/dev/null || echo "$TF_CLI_CONFIG_FILE")" \
			"$cli" -chdir="$dir" destroy -auto-approve -input=false >/dev/null 2>&1 || echo "left in the cluster: see $dir" >&2
	done
}

# bench_objects_tf N PREFIX NODE prints the objects benchmarks' configuration: N storage classes
# and N local PVs on NODE without directories (create_directory = false), named after PREFIX.
bench_objects_tf() {
	provider_tf
	cat <<TF
resource "clusterstorage_storage_class" "bench" {
  count               = $1
  name                = "$2-\${count.index}"
  storage_provisioner = "kubernetes.io/no-provisioner"
  labels              = { bench = "true" }
}
resource "clusterstorage_local_pv" "bench" {
  count              = $1
  name               = "$2-pv-\${count.index}"
  node               = "$3"
  path               = "/tmp/$2/vol-\${count.index}"
  capacity           = "1Gi"
  storage_class_name = "$2-none"
  labels             = { bench = "true" }
  create_directory   = false
}
TF
}

# bench_anchor_rc FILE writes a CLI configuration that installs hashicorp/kubernetes from the
# filesystem_mirror BENCH_ANCHOR_MIRROR (the project never builds or ships that provider).
bench_anchor_rc() {
	cat >"$1" <<RC
provider_installation {
  filesystem_mirror {
    path    = "${BENCH_ANCHOR_MIRROR:?}"
    include = ["registry.terraform.io/hashicorp/kubernetes", "registry.opentofu.org/hashicorp/kubernetes"]
  }
}
RC
}

# bench_anchor_tf N PREFIX NODE prints bench_objects_tf's objects made through hashicorp/kubernetes
# (kubernetes_storage_class_v1, kubernetes_persistent_volume_v1).
bench_anchor_tf() {
	cat <<TF
terraform {
  required_providers {
    kubernetes = { source = "hashicorp/kubernetes" }
  }
}
provider "kubernetes" {
  config_path = "$KUBECONFIG_PATH"
}
resource "kubernetes_storage_class_v1" "bench" {
  count = $1
  metadata {
    name   = "$2-k-\${count.index}"
    labels = { bench = "true" }
  }
  storage_provisioner = "kubernetes.io/no-provisioner"
}
resource "kubernetes_persistent_volume_v1" "bench" {
  count = $1
  metadata {
    name   = "$2-kpv-\${count.index}"
    labels = { bench = "true" }
  }
  spec {
    capacity           = { storage = "1Gi" }
    access_modes       = ["ReadWriteOnce"]
    storage_class_name = "$2-none"
    persistent_volume_source {
      local {
        path = "/tmp/$2/vol-\${count.index}"
      }
    }
    node_affinity {
      required {
        node_selector_term {
          match_expressions {
            key      = "kubernetes.io/hostname"
            operator = "In"
            values   = ["$3"]
          }
        }
      }
    }
  }
}
TF
}

cleanup_work() {
	[[ -n "${1:-}" && -d "$1" ]] && rm -rf "$1"
}

# start_sshd DIR PORT: an OpenSSH sshd on 127.0.0.1:PORT standing for the local cluster's node,
# with a host key and a client key generated into DIR (client_ed25519, known_hosts). Idempotent.
start_sshd() {
	local d="$1" port="$2"
	mkdir -p "$d" /run/sshd
	[[ -f $d/host_ed25519 ]] || ssh-keygen -q -t ed25519 -N '' -f "$d/host_ed25519"
	[[ -f $d/client_ed25519 ]] || ssh-keygen -q -t ed25519 -N '' -f "$d/client_ed25519"
	cp "$d/client_ed25519.pub" "$d/authorized_keys"
	printf '[127.0.0.1]:%s %s\n' "$port" "$(cut -d' ' -f1,2 "$d/host_ed25519.pub")" >"$d/known_hosts"
	sshd_config "127.0.0.1:$port" "$d/sshd.pid" "$d/authorized_keys" "$d/host_ed25519" >"$d/sshd_config"
	if [[ -f $d/sshd.pid ]] && kill -0 "$(cat "$d/sshd.pid")" 2>/dev/null; then
		return
	fi
	/usr/sbin/sshd -f "$d/sshd_config" -E "$d/sshd.log"
	local deadline=$((SECONDS + 10))
	until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
		((SECONDS < deadline)) || { cat "$d/sshd.log" >&2; echo "sshd did not start" >&2; return 1; }
		sleep 0.1
	done
}

# stop_sshd DIR stops the sshd start_sshd started there.
stop_sshd() {
	local pidfile="$1/sshd.pid"
	if [[ -f $pidfile ]]; then
		kill "$(cat "$pidfile")" 2>/dev/null || true
		rm -f "$pidfile"
	fi
}

# peak_rss runs a command (its output goes to $work/cmd.log, shown when it fails) and prints the
# peak resident memory (VmHWM, in MiB) of the processes it starts (the provider plugins), and the
# peak of its anonymous part (RssAnon: heap and stacks; the rest is the executable's pages, which
# vary with what the page cache holds), read from /proc every 50 ms without forking, so that the
# sampling neither slows the run nor counts another run's providers.
peak_rss() {
	local peak=0 anon=0 task kids more child hwm rss key value _
	"$@" >"${work:?}/cmd.log" 2>&1 &
	local cmd=$!
	while kill -0 "$cmd" 2>/dev/null; do
		kids=()
		for task in /proc/"$cmd"/task/*/children; do
			read -r -a more 2>/dev/null <"$task" || true
			kids+=("${more[@]}")
		done
		for child in "${kids[@]}"; do
			hwm=0 rss=0
			while read -r key value _; do
				case $key in
				VmHWM:) hwm=$value ;;
				RssAnon:) rss=$value ;;
				esac
			done 2>/dev/null <"/proc/$child/status" || true
			((hwm > peak)) && peak=$hwm
			((rss > anon)) && anon=$rss
		done
		read -r -t 0.05 -u "$tick" _ || true
	done
	wait "$cmd" || { cat "$work/cmd.log" >&2; return 1; }
	echo $((peak / 1024)) $((anon / 1024))
}

timed() { # prints "seconds peakMiB anonMiB"
	local t0=$EPOCHREALTIME mem
	mem=$(peak_rss "$@")
	printf '%.2f %s\n' "$(bc <<<"$EPOCHREALTIME - $t0")" "$mem"
}

# tick is a descriptor nothing is ever written to: reading it with a timeout sleeps without a fork.
exec {tick}<> <(:)
