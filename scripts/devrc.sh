#!/usr/bin/env bash
# Writes two Terraform/OpenTofu CLI configurations for the provider built in bin/ (make install):
#
#   bin/dev.tfrc     dev_overrides: `terraform plan/apply` use bin/ without `terraform init`
#                    (init itself is not supported with overrides)
#   bin/mirror.tfrc  a filesystem_mirror in bin/mirror, which `terraform init` and `tofu init`
#                    install from as from a registry: for configurations with backends, modules
#                    and a lock file. Its version is $MIRROR_VERSION, else VERSION's, else
#                    0.0.1: init picks a pre-release (0.0.0-dev) only for an exact `version`
#                    constraint, and takes 0.0.0 for "no version" and skips it. Set
#                    MIRROR_VERSION to one your configuration's constraint accepts
#                    (make install MIRROR_VERSION=0.1.0).
#
#   export TF_CLI_CONFIG_FILE=$PWD/bin/dev.tfrc     (or $PWD/bin/mirror.tfrc)
#
# It prints the path of bin/dev.tfrc.
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

# The mirror's unpacked layout: <hostname>/<namespace>/<type>/<version>/<os>_<arch>/<binary>.
version="${MIRROR_VERSION:-}"
if [[ -z $version && -s "$ROOT/VERSION" ]]; then
	version="$(tr -d ' \n' <"$ROOT/VERSION")"
fi
version="${version:-0.0.1}"
platform="$(go env GOOS)_$(go env GOARCH)"
for host in registry.terraform.io registry.opentofu.org; do
	dir="$ROOT/bin/mirror/$host/clusterstorage/clusterstorage/$version/$platform"
	mkdir -p "$dir"
	ln -f "$ROOT/bin/terraform-provider-clusterstorage" "$dir/terraform-provider-clusterstorage_v$version" 2>/dev/null ||
		cp "$ROOT/bin/terraform-provider-clusterstorage" "$dir/terraform-provider-clusterstorage_v$version"
done
cat >"$ROOT/bin/mirror.tfrc" <<RC
provider_installation {
  filesystem_mirror {
    path    = "$ROOT/bin/mirror"
    include = ["registry.terraform.io/clusterstorage/clusterstorage", "registry.opentofu.org/clusterstorage/clusterstorage"]
  }
  direct {
    exclude = ["registry.terraform.io/clusterstorage/clusterstorage", "registry.opentofu.org/clusterstorage/clusterstorage"]
  }
}
RC
echo "$ROOT/bin/dev.tfrc"
