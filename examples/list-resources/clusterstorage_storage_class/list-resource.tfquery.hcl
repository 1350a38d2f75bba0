# adopt.tfquery.hcl: every class of the local volume provisioner, with the settings an import
# records. `terraform query -generate-config-out=generated.tf` (Terraform 1.14+) writes a
# resource block and an import block for each.
list "clusterstorage_storage_class" "local" {
  provider         = clusterstorage
  include_resource = true

  config {
    storage_provisioner = "kubernetes.io/no-provisioner"
  }
}
