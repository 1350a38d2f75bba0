#!/usr/bin/env bash
# The one test command (`make test`). On a fresh machine it installs what the tests need, builds
# the pinned terraform and tofu, starts the local cluster unless CLUSTERSTORAGE_ACC_KUBECONFIG
# points at another one, runs the unit tests and the acceptance tests under both CLIs, and stops
# what it started, also when a test fails.
#
# Environment:
#   CLUSTERSTORAGE_ACC_KUBECONFIG  run the acceptance tests against this cluster instead
#   TEST_CLIS                      which CLIs run the acceptance suite (default: "terraform tofu")
#   TESTARGS                       extra arguments for go test (e.g. -run TestAccStorageClass)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export PATH="$ROOT/bin:$PATH"

TEST_CLIS="${TEST_CLIS:-terraform tofu}"
TESTARGS="${TESTARGS:-}"
ACC_DIR="$ROOT/.acc"
mkdir -p "$ACC_DIR"

log() { printf '==> %s\n' "$*" >&2; }

# A CLI configuration of our own: the machine's TF_CLI_CONFIG_FILE may point at a file that does
# not exist (which breaks tofu) or at one with settings that would change what is tested.
: >"$ACC_DIR/cli.tfrc"
export TF_CLI_CONFIG_FILE="$ACC_DIR/cli.tfrc"
export CHECKPOINT_DISABLE=1
export TF_ACC_PROVIDER_NAMESPACE=hashicorp

log "installing the Debian packages the tests use"
scripts/deps.sh

for cli in $TEST_CLIS; do
	log "building $cli"
	make --no-print-directory "bin/$cli"
done
# The Helm 3 CLI: the backend's acceptance tests make releases with it as Helm 3 users did.
log "building helm3"
make --no-print-directory bin/helm3

started_cluster=""
cleanup() {
	status=$?
	if [[ -n "$started_cluster" ]]; then
		log "stopping the local cluster"
		tools/kube/cluster.sh down || status=1
	fi
	exit "$status"
}
trap cleanup EXIT INT TERM

if [[ -z "${CLUSTERSTORAGE_ACC_KUBECONFIG:-}" ]]; then
	if ! tools/kube/cluster.sh status >/dev/null 2>&1; then
		started_cluster=1
	fi
	log "starting the local cluster"
	export KUBECONFIG
	KUBECONFIG="$(tools/kube/cluster.sh up | tail -1)"
else
	log "using the cluster in $CLUSTERSTORAGE_ACC_KUBECONFIG"
	export KUBECONFIG="$CLUSTERSTORAGE_ACC_KUBECONFIG"
fi

# Every example under examples/ is formatted and validates under each CLI with this build.
log "examples: fmt and validate"
scripts/check-examples.sh

# Every go test but the race detector's runs without cgo, as releases are built (GNUmakefile).
# Unit tests, and the integration tests of the machinery packages (Helm against the cluster in
# KUBECONFIG, SSH against a real sshd), which do not depend on the CLI and so run once.
log "unit and integration tests"
# shellcheck disable=SC2086
# The k3s migration's stand-in tests alone take about 10 minutes on 2 cores (go test's default
# timeout for a package).
CGO_ENABLED=0 go test -trimpath -count=1 -timeout 25m $TESTARGS ./...
# The SSH machinery runs goroutines per session: its tests run under the race detector too.
log "internal/node under the race detector"
# shellcheck disable=SC2086
go test -trimpath -race -count=1 $TESTARGS ./internal/node/...

# Tests against the cluster that run no CLI (named TestCluster*: the migration machinery on the
# k3s-shaped node, the node itself) run once, one package at a time, as the acceptance tests do.
# Only the packages that have such tests: linking a test binary takes seconds.
log "cluster tests without a CLI"
mapfile -t cluster_pkgs < <(grep -l '^func TestCluster' internal/*/*_test.go | xargs -n1 dirname | sort -u | sed 's|^|./|')
# shellcheck disable=SC2086
CGO_ENABLED=0 TF_ACC=1 go test -trimpath -count=1 -p 1 -timeout 30m -run '^TestCluster' $TESTARGS "${cluster_pkgs[@]}"

# The acceptance tests under each CLI, the CLIs side by side; packages that share cluster-wide
# names never run at once (scripts/acc.sh).
log "acceptance tests under: $TEST_CLIS"
# shellcheck disable=SC2086
scripts/acc.sh $TEST_CLIS
