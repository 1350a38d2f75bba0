#!/usr/bin/env bash
# Checks that the filesystem mirror `make install` lays out (bin/mirror, bin/mirror.tfrc) is what
# `terraform init` and `tofu init` accept, offline, in a directory as a real repository has it: a
# `backend "local"` block, a local module that names the provider too, and a lock file. Then
# `validate`, and a second `init` that must accept the lock file the first one wrote.
# Called by scripts/check-examples.sh; runs on its own too: scripts/check-mirror.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
MIRROR_CLIS="${MIRROR_CLIS:-terraform tofu}"

log() { printf '==> %s\n' "$*" >&2; }

make --no-print-directory install >/dev/null
rc="$ROOT/bin/mirror.tfrc"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

failed=0
for cli in $MIRROR_CLIS; do
	dir="$work/$cli"
	mkdir -p "$dir/modules/class"
	cat >"$dir/main.tf" <<'TF'
terraform {
  required_providers {
    clusterstorage = { source = "clusterstorage/clusterstorage" }
  }
  backend "local" {
    path = "state/terraform.tfstate"
  }
}

provider "clusterstorage" {}

module "class" {
  source = "./modules/class"
  name   = "mirror-check"
}
TF
	cat >"$dir/modules/class/main.tf" <<'TF'
terraform {
  required_providers {
    clusterstorage = { source = "clusterstorage/clusterstorage" }
  }
}

variable "name" {
  type = string
}

resource "clusterstorage_storage_class" "this" {
  name                = var.name
  storage_provisioner = "kubernetes.io/no-provisioner"
}
TF
	run() { (cd "$dir" && TF_CLI_CONFIG_FILE="$rc" CHECKPOINT_DISABLE=1 TF_PLUGIN_CACHE_DIR="" "$ROOT/bin/$cli" "$@" -no-color 2>&1); }
	if ! out=$(run init -input=false); then
		printf '%s init against the mirror FAILED:\n%s\n' "$cli" "$out" >&2
		failed=1
		continue
	fi
	if ! grep -q 'provider "registry\.\(terraform\.io\|opentofu\.org\)/clusterstorage/clusterstorage"' "$dir/.terraform.lock.hcl"; then
		printf '%s init wrote no lock entry for the provider:\n%s\n' "$cli" "$(cat "$dir/.terraform.lock.hcl" 2>&1)" >&2
		failed=1
		continue
	fi
	for step in validate "init -input=false"; do
		# shellcheck disable=SC2086 # step is a command and its flags
		if ! out=$(run $step); then
			printf '%s %s after init FAILED:\n%s\n' "$cli" "$step" "$out" >&2
			failed=1
		fi
	done
	log "mirror: $cli init (backend, module, lock file) and validate"
done
exit "$failed"
