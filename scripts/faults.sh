#!/usr/bin/env bash
# The fault matrix (issue 29): every row of internal/faults' TestAccFaults_matrix against the
# local cluster (`make dev-cluster` first; the matrix restarts its API server, stalls its etcd and
# cuts its SSH connections, so nothing else may use the cluster meanwhile), then the matrix as a
# Markdown table; then every row of the k3s migration's fault matrix on the k3s-shaped node
# (TestClusterK3sMigration_realNodeFaults) and every phase of the volume migration's move between
# nodes with the provider killed (TestAccVolumeMigration_crossNodeKilled). `make test` runs the
# rows marked for CI only.
#
#   FAULTS_CLI  the CLI the rows run under (default terraform: bin/terraform)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

cli="${FAULTS_CLI:-terraform}"
make --no-print-directory "bin/$cli" >&2
mkdir -p .acc
report="$ROOT/.acc/faults.tsv"
: >"$report"
status=0
CGO_ENABLED=0 TF_ACC=1 TF_ACC_TERRAFORM_PATH="$ROOT/bin/$cli" FAULTS_ALL=1 FAULTS_REPORT="$report" \
	go test -trimpath -count=1 -timeout 60m -run '^TestAccFaults_matrix$' ./internal/faults/ >&2 || status=$?
# The k3s migration's fault matrix on the k3s-shaped node (node 3): `make test` runs its rows that
# only a real node can check; every row here.
CGO_ENABLED=0 TF_ACC=1 FAULTS_ALL=1 \
	go test -trimpath -count=1 -timeout 60m -run '^TestClusterK3sMigration_realNodeFaults$' ./internal/k3smigration/ >&2 || status=$?
# The volume migration's move between nodes with the provider killed in each phase after the
# first copy (TestAccVolumeMigration_crossNodeKilled; `make test` runs its final copy's row).
CGO_ENABLED=0 TF_ACC=1 TF_ACC_TERRAFORM_PATH="$ROOT/bin/$cli" TF_ACC_PROVIDER_NAMESPACE=hashicorp CHECKPOINT_DISABLE=1 FAULTS_ALL=1 \
	go test -trimpath -count=1 -timeout 30m -run '^TestAccVolumeMigration_crossNodeKilled$' ./internal/volumemigration/ >&2 || status=$?

printf '\nfault matrix, %s, %s\n\n' "$("bin/$cli" version 2>/dev/null | head -1)" "$(date -u +%Y-%m-%d)"
printf '| fault | during | the faulted run | made, in no state | survived | leaked | lost | why not |\n|---|---|---|---|---|---|---|---|\n'
awk -F '\t' '{ printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, ($5 == "true" ? "yes" : "NO"), $6, $7, $8 }' "$report"
rows=$(wc -l <"$report")
survived=$(awk -F '\t' '$5 == "true" && $6 == 0 && $7 == 0' "$report" | wc -l)
printf '\n%d rows tried, %d survived with nothing leaked or lost\n' "$rows" "$survived"
exit "$status"
