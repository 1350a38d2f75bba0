# adopt.tfquery.hcl: the OpenEBS releases of namespace openebs, whoever installed them, with the
# settings an import records. `terraform query -generate-config-out=generated.tf` (Terraform
# 1.14+) writes a resource block and an import block for each; a release that a k3s HelmChart,
# Flux or Argo CD manages is a warning naming its owner instead.
list "clusterstorage_storage_backend" "openebs" {
  provider         = clusterstorage
  include_resource = true

  config {
    namespace = "openebs"
    type      = "openebs"
  }
}
