#!/usr/bin/env bash
# make demo / make demo-down.
#
# up: builds what it needs, starts the local cluster (three nodes, each with its own sshd), and
# applies examples/quickstart (in .demo/work, so the example stays clean) on every node. Prints
# the comparison the outputs hold.
# down: destroys what the demo applied and stops the local cluster.
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

# write_vars: the quickstart's variables. On the local cluster every node is reached through its
# own sshd (nodes.json, written by tools/kube/cluster.sh): node 1's volume lives in .demo/disks on
# this machine, each machine node's on its data disk. On another cluster
# (CLUSTERSTORAGE_ACC_KUBECONFIG) the first node only, through an sshd the demo starts here.
write_vars() {
	local nodes_json
	nodes_json="$(dirname "$KUBECONFIG_PATH")/nodes.json"
	{
		printf 'kubeconfig    = "%s"\n' "$KUBECONFIG_PATH"
		printf 'fio_image     = "localhost/clusterstorage/fio:3.33"\n'
		printf 'openebs_chart = "%s"\n' "$DEMO/charts/openebs-4.4"
		if [[ -f $nodes_json ]]; then
			jq -r --arg disks "$DEMO/disks" '
				"ssh_user         = \"\(.ssh_user)\"",
				"ssh_key_path     = \"\(.ssh_private_key)\"",
				"known_hosts_path = \"\(.ssh_known_hosts)\"",
				"nodes = {",
				(.nodes[] | "  \"\(.name)\" = { host = \"\(.ssh_host)\", port = \(.ssh_port), data_dir = \"\(if (.data_disks | length) > 0 then .data_disks[0] + "/quickstart" else $disks end)\" }"),
				"}"' "$nodes_json"
		else
			local node
			node="$(bin/kube kubectl --kubeconfig "$KUBECONFIG_PATH" get nodes -o 'jsonpath={.items[0].metadata.name}')"
			printf 'ssh_user         = "%s"\n' "$(id -un)"
			printf 'ssh_key_path     = "%s"\n' "$DEMO/ssh/client_ed25519"
			printf 'known_hosts_path = "%s"\n' "$DEMO/ssh/known_hosts"
			printf 'nodes = {\n  "%s" = { host = "127.0.0.1", port = %s, data_dir = "%s" }\n}\n' "$node" "$SSH_PORT" "$DEMO/disks"
		fi
	} >"$DEMO/work/terraform.tfvars"
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
	if [[ ! -f "$(dirname "$KUBECONFIG_PATH")/nodes.json" ]]; then
		step "starting an sshd on 127.0.0.1:$SSH_PORT for the node"
		start_sshd "$DEMO/ssh" "$SSH_PORT"
	fi
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
		if [[ -d $DEMO/ssh ]]; then start_sshd "$DEMO/ssh" "$SSH_PORT"; fi
		step "terraform destroy"
		# -refresh=false: a destroy's refresh would read the comparison again (every fio round).
		"$TF" -chdir="$DEMO/work" destroy -auto-approve -input=false -refresh=false
	fi
	if [[ -d $DEMO/ssh ]]; then stop_sshd "$DEMO/ssh"; fi
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
