#!/usr/bin/env bash
# Checks every example under examples/ the way a user would meet it: `terraform fmt -check`, then
# `validate` under each CLI in $TEST_CLIS (default: terraform tofu) against the local build of the
# provider (bin/dev.tfrc's dev_overrides, so no `terraform init` and no registry are needed).
# Called by scripts/test.sh; runs on its own too: scripts/check-examples.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
TEST_CLIS="${TEST_CLIS:-terraform tofu}"

log() { printf '==> %s\n' "$*" >&2; }

make --no-print-directory install >/dev/null
rc="$(scripts/devrc.sh)"

first_cli=${TEST_CLIS%% *}
log "examples: $first_cli fmt -check"
TF_CLI_CONFIG_FILE="$rc" "bin/$first_cli" fmt -check -recursive -diff examples/

failed=0
mapfile -t dirs < <(find examples -name '*.tf' -printf '%h\n' | sort -u)
for cli in $TEST_CLIS; do
	for dir in "${dirs[@]}"; do
		if ! out=$(cd "$dir" && TF_CLI_CONFIG_FILE="$rc" CHECKPOINT_DISABLE=1 "$ROOT/bin/$cli" validate -no-color 2>&1); then
			printf '%s validate %s FAILED:\n%s\n' "$cli" "$dir" "$out" >&2
			failed=1
		fi
	done
	log "examples: $cli validate (${#dirs[@]} directories)"
done
# validate leaves nothing but a possible .terraform.lock.hcl, which dev_overrides do not write.
scripts/check-mirror.sh || failed=1
exit "$failed"
