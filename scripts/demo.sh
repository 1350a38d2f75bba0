#!/usr/bin/env bash
# make demo / make demo-down.
#
# up: builds what it needs, starts the local cluster and an sshd on 127.0.0.1 standing for its
# node, and applies examples/quickstart (in .demo/work, so the example stays clean). Prints the
# comparison the outputs hold.
# down: destroys what the demo applied, stops its sshd and the local cluster.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=scripts/lib.sh
source scripts/lib.sh

DEMO="$ROOT/.demo"
SSH_PORT="${DEMO_SSH_PORT:-22122}"
TF="${DEMO_TF:-$ROOT/bin/terraform}"
export CHECKPOINT_DISABLE=1

step() { printf '\n==> [%3ds] %s\n' "$SECONDS" "$*" >&2; }

write_vars() {
	local node
	node="$(bin/kube kubectl --kubeconfig "$KUBECONFIG_PATH" get nodes -o 'jsonpath={.items[0].metadata.name}')"
	cat >"$DEMO/work/terraform.tfvars" <<VARS
kubeconfig       = "$KUBECONFIG_PATH"
node             = "$node"
ssh_user         = "$(id -un)"
ssh_port         = $SSH_PORT
ssh_key_path     = "$DEMO/ssh/client_ed25519"
known_hosts_path = "$DEMO/ssh/known_hosts"
data_dir         = "$DEMO/disks"
fio_image        = "localhost/clusterstorage/fio:3.33"
openebs_chart    = "$DEMO/charts/openebs-4.4"
VARS
}

up() {
	step "installing Debian packages (first run only)"
	scripts/deps.sh
	step "building the provider and terraform (cold: several minutes; warm: seconds)"
	make --no-print-directory build bin/terraform >/dev/null
	export TF_CLI_CONFIG_FILE
	TF_CLI_CONFIG_FILE="$(scripts/devrc.sh)"
	step "starting the local cluster (cold: the Kubernetes build takes ~10 minutes)"
	cluster_up
	if [[ -z ${CLUSTERSTORAGE_ACC_KUBECONFIG:-} ]]; then
		step "starting metrics-server on the local cluster (memory overhead is measured, not guessed)"
		tools/kube/metrics.sh up "$DEMO/metrics-server" "$KUBECONFIG_PATH"
	fi
	step "starting an sshd on 127.0.0.1:$SSH_PORT for the node"
	start_sshd "$DEMO/ssh" "$SSH_PORT"
	mkdir -p "$DEMO/work" "$DEMO/disks"
	cp examples/quickstart/*.tf "$DEMO/work/"
	# The fixture OpenEBS chart: the real chart's value keys and StorageClass, with a real
	# hostPath provisioner built from source (no registry is reachable here).
	rm -rf "$DEMO/charts" && cp -r internal/acctest/testdata/charts "$DEMO/charts"
	write_vars
	step "terraform apply (fio runs for each target; progress below)"
	"$TF" -chdir="$DEMO/work" apply -auto-approve -input=false
	step "the comparison"
	"$TF" -chdir="$DEMO/work" output -raw comparison
	printf '\n'
	"$TF" -chdir="$DEMO/work" output -json warnings
	(cd tools/demochart && go build -trimpath -o "$ROOT/bin/demochart" .)
	"$TF" -chdir="$DEMO/work" output -json chart_data | bin/demochart -o "$DEMO/chart.svg"
	printf '\n\nThe same as a bar chart: %s\n' "$DEMO/chart.svg"
	printf '\nRemove everything with: make demo-down\n'
}

down() {
	if [[ -f $DEMO/work/terraform.tfstate ]] && cluster_running; then
		export TF_CLI_CONFIG_FILE
		TF_CLI_CONFIG_FILE="$(scripts/devrc.sh)"
		KUBECONFIG_PATH="$ROOT/.cluster/kubeconfig"
		start_sshd "$DEMO/ssh" "$SSH_PORT"
		step "terraform destroy"
		"$TF" -chdir="$DEMO/work" destroy -auto-approve -input=false
	fi
	stop_sshd "$DEMO/ssh"
	if [[ -d $DEMO/metrics-server ]] && cluster_running; then
		tools/kube/metrics.sh down "$DEMO/metrics-server" "$ROOT/.cluster/kubeconfig"
	fi
	step "stopping the local cluster"
	tools/kube/cluster.sh down
	rm -rf "$DEMO"
}

cluster_running() { tools/kube/cluster.sh status >/dev/null 2>&1; }

case "${1:-}" in
up) up ;;
down) down ;;
*) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
