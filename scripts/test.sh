#!/usr/bin/env bash
# The one test command (`make test`). On a fresh machine it installs what the tests need, builds
# the pinned terraform and tofu, starts the local cluster unless CLUSTERSTORAGE_ACC_KUBECONFIG
# points at another one, runs the unit tests and the acceptance tests under both CLIs, and stops
# what it started, also when a test fails.
#
# Environment:
#   CLUSTERSTORAGE_ACC_KUBECONFIG  run the acceptance tests against this cluster instead
#   TEST_CLIS                      which CLIs run the acceptance suite (default: "terraform tofu")
#   SMOKE_CLIS                     which CLIs run only its smoke subset, SMOKE_RUN (default:
#                                  "terraform1.5", the oldest supported Terraform)
#   TESTARGS                       extra arguments for go test (e.g. -run TestAccStorageClass)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export PATH="$ROOT/bin:$PATH"

TEST_CLIS="${TEST_CLIS:-terraform tofu}"
SMOKE_CLIS="${SMOKE_CLIS-terraform1.5}"
# One test of each resource and data source kind that needs no backend install: the provider's
# configuration, a class, a local volume, a benchmark of a node path.
SMOKE_RUN='^TestAcc(Provider_.*|StorageClass_lifecycle|LocalPV_lifecycle|StorageBenchmark_nodePath)$'
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
# The smoke CLIs are first needed by the acceptance stage: they build meanwhile, at the lowest
# priority (a cold terraform takes about 5 minutes), in a session of their own whose autogroup is
# niced too (see .ci/run).
smoke_pid=""
if [[ -n $SMOKE_CLIS ]]; then
	log "building $SMOKE_CLIS in the background (.acc/build-smoke.log)"
	targets=()
	for cli in $SMOKE_CLIS; do
		targets+=("bin/$cli")
	done
	setsid --wait sh -c 'echo 19 >/proc/self/autogroup 2>/dev/null; exec nice -n 19 make --no-print-directory "$@"' sh \
		"${targets[@]}" >"$ACC_DIR/build-smoke.log" 2>&1 &
	smoke_pid=$!
fi
# The Helm 3 CLI: the backend's acceptance tests make releases with it as Helm 3 users did.
log "building helm3"
make --no-print-directory bin/helm3

started_cluster=""
cleanup() {
	status=$?
	if [[ -n $smoke_pid ]]; then
		kill -- "-$smoke_pid" 2>/dev/null || true
	fi
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
smoke=()
if [[ -n $smoke_pid ]]; then
	if ! wait "$smoke_pid"; then
		cat "$ACC_DIR/build-smoke.log" >&2
		log "building $SMOKE_CLIS failed (above)"
		exit 1
	fi
	smoke_pid=""
	for cli in $SMOKE_CLIS; do
		smoke+=("$cli:$SMOKE_RUN")
	done
fi
log "acceptance tests under: $TEST_CLIS${SMOKE_CLIS:+ (and the smoke subset under $SMOKE_CLIS)}"
# shellcheck disable=SC2086
scripts/acc.sh $TEST_CLIS "${smoke[@]}"
