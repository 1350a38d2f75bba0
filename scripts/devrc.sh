#!/usr/bin/env bash
# Writes bin/dev.tfrc, a Terraform/OpenTofu CLI configuration whose dev_overrides make
# `terraform plan/apply` use the provider built in bin/ without `terraform init`:
#
#   export TF_CLI_CONFIG_FILE=$PWD/bin/dev.tfrc
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "$ROOT/bin"
cat >"$ROOT/bin/dev.tfrc" <<RC
provider_installation {
  dev_overrides {
    "registry.terraform.io/clusterstorage/clusterstorage" = "$ROOT/bin"
    "registry.opentofu.org/clusterstorage/clusterstorage" = "$ROOT/bin"
  }
  direct {}
}
RC
echo "$ROOT/bin/dev.tfrc"
