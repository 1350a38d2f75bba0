#!/usr/bin/env bash
# The one test command (`make test`). On a fresh machine it installs what the tests need, builds
# the pinned terraform and tofu, starts the local cluster unless CLUSTERSTORAGE_ACC_KUBECONFIG
# points at another one, runs the unit tests and the acceptance tests under both CLIs, and stops
# what it started, also when a test fails.
#
# Environment:
#   CLUSTERSTORAGE_ACC_KUBECONFIG  run the acceptance tests against this cluster instead
#   TEST_CLIS                      which CLIs run the whole acceptance suite (default: "terraform",
#                                  Terraform 1.15.9)
#   TEST_WORKERS                   workers per whole-suite CLI, sharing its packages (default: 2:
#                                  the backend group beside the other packages)
#   SUBSET_CLIS                    which CLIs run the tests where CLIs can differ, CLI_RUN (default:
#                                  "tofu", OpenTofu 1.12.6)
#   SMOKE_CLIS                     which CLIs run only its smoke subset, SMOKE_RUN (default:
#                                  "terraform1.5", the oldest supported Terraform)
#   FIRST_CLI_ONLY                 acceptance tests only the first of TEST_CLIS runs (a regex;
#                                  default: those that declare acctest.FirstCLIOnly, see below;
#                                  empty: every CLI runs them)
#   TESTARGS                       extra arguments for go test (e.g. -run TestAccStorageClass)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export PATH="$ROOT/bin:$PATH"

TEST_CLIS="${TEST_CLIS:-terraform}"
SUBSET_CLIS="${SUBSET_CLIS-tofu}"
TEST_WORKERS="${TEST_WORKERS:-2}"
SMOKE_CLIS="${SMOKE_CLIS-terraform1.5}"
# Which tests run under which CLIs is declared by each test: acctest.RunsUnder(t, acctest.EveryCLI)
# as its first statement runs it under SUBSET_CLIS too (what a second CLI can change: how it plans
# and applies each type, one lifecycle of each with its import, moved blocks, identity, write-only
# attributes, unknown values at plan, an interrupt (Ctrl-C, as the CLI passes it on));
# acctest.OldestTerraform puts it in the smoke subset of SMOKE_CLIS (one test of each kind that
# needs no backend install); acctest.FirstCLIOnly runs it under the first of TEST_CLIS only when
# several run the whole suite (TEST_CLIS="terraform tofu" SUBSET_CLIS=): the storage backend's
# tests of what no CLI takes part in (the Helm machinery: chart versions and sources, preflight
# checks, the destroy guard, foreign and killed Helm 3 releases, Longhorn, Mayastor), half of the
# backend package's time on the suite's longest path, and the fault matrix's CI rows, which hold
# the cluster alone. What the provider does on the cluster is the same under any CLI and runs
# under TEST_CLIS only. internal/acctest/placement reads the declarations and prints the three
# regexes (CLI_RUN, SMOKE_RUN, FIRST_CLI_ONLY_RUN); it fails on a declaration out of place.
placement="$(CGO_ENABLED=0 go run -trimpath ./internal/acctest/placement)"
eval "$placement"
FIRST_CLI_ONLY="${FIRST_CLI_ONLY-$FIRST_CLI_ONLY_RUN}"
TESTARGS="${TESTARGS:-}"
ACC_DIR="$ROOT/.acc"
mkdir -p "$ACC_DIR/locks"
# What failed and then passed when run again alone (scripts/unit.sh, scripts/acc.sh).
rm -f "$ACC_DIR/flaky.txt"

log() { printf '==> %s\n' "$*" >&2; }

# A CLI configuration of our own: the machine's TF_CLI_CONFIG_FILE may point at a file that does
# not exist (which breaks tofu) or at one with settings that would change what is tested.
: >"$ACC_DIR/cli.tfrc"
export TF_CLI_CONFIG_FILE="$ACC_DIR/cli.tfrc"
export CHECKPOINT_DISABLE=1
export TF_ACC_PROVIDER_NAMESPACE=hashicorp

log "installing the Debian packages the tests use"
scripts/deps.sh

for cli in $TEST_CLIS $SUBSET_CLIS; do
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
# The Helm 3 CLI: the backend's acceptance tests make releases with it as Helm 3 users did; the
# Helm 4 CLI: TestAccStorageBackend_adoptWithQuery installs the release it adopts with it.
log "building helm3 and helm"
make --no-print-directory bin/helm3 bin/helm

started_cluster=""
unit_pid=""
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
	status=$?
	for pid in "$smoke_pid" "$unit_pid"; do
		[[ -z $pid ]] || kill -- "-$pid" 2>/dev/null || true
	done
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

# The unit and integration tests do not depend on the CLI and so run once; they run beside the
# cluster and acceptance tests (which mostly wait on the cluster), in a session of their own so
# that cleanup stops them with everything they started. Their output is shown when they are done.
log "unit and integration tests, beside the tests below (.acc/unit.log, shown when they end)"
setsid --wait scripts/unit.sh >"$ACC_DIR/unit.log" 2>&1 &
unit_pid=$!

# Tests against the cluster that run no CLI (named TestCluster*: the migration machinery on the
# k3s-shaped node, the node itself) run once, one package at a time, holding the cluster lock
# alone as the k3s migration's acceptance tests do (scripts/acc.sh): they restart k3s on node 3,
# where any test's pods may run. Only the packages that have such tests: linking a test binary
# takes seconds.
status=0
log "cluster tests without a CLI"
mapfile -t cluster_pkgs < <(grep -l '^func TestCluster' internal/*/*_test.go | xargs -n1 dirname | sort -u | sed 's|^|./|')
# shellcheck disable=SC2086
CGO_ENABLED=0 TF_ACC=1 flock -x "$ACC_DIR/locks/cluster" \
	go test -trimpath -count=1 -p 1 -timeout 30m -run '^TestCluster' $TESTARGS "${cluster_pkgs[@]}" || status=1

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
whole=()
for cli in $TEST_CLIS; do
	whole+=("$cli*$TEST_WORKERS${whole[0]:+${FIRST_CLI_ONLY:+!$FIRST_CLI_ONLY}}")
done
for cli in $SUBSET_CLIS; do
	whole+=("$cli:$CLI_RUN")
done
log "acceptance tests under: $TEST_CLIS${SUBSET_CLIS:+ (the tests where CLIs differ under $SUBSET_CLIS)}${SMOKE_CLIS:+ (and the smoke subset under $SMOKE_CLIS)}"
scripts/acc.sh "${whole[@]}" "${smoke[@]}" || status=1

log "unit and integration tests (they ran beside the tests above)"
unit_status=0
wait "$unit_pid" || unit_status=$?
unit_pid=""
cat "$ACC_DIR/unit.log"
[[ $unit_status == 0 ]] || status=1
exit "$status"
