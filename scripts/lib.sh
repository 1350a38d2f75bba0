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

# provider_tf prints the terraform and provider blocks of a configuration for the locally built
# provider (scripts/devrc.sh's dev_overrides) on the cluster at KUBECONFIG_PATH.
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
}
HCL
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
			read -r -a more <"$task" 2>/dev/null || true
			kids+=("${more[@]}")
		done
		for child in "${kids[@]}"; do
			hwm=0 rss=0
			while read -r key value _; do
				case $key in
				VmHWM:) hwm=$value ;;
				RssAnon:) rss=$value ;;
				esac
			done <"/proc/$child/status" 2>/dev/null || true
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
