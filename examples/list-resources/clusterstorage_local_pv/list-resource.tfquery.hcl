# adopt.tfquery.hcl: the hand-made local volumes of one class on one node, with the settings an
# import records (the directory is looked at over the provider's ssh block).
# `terraform query -generate-config-out=generated.tf` (Terraform 1.14+) writes a resource block
# and an import block for each.
list "clusterstorage_local_pv" "nvme" {
  provider         = clusterstorage
  include_resource = true

  config {
    storage_class_name = "local-nvme"
    node               = "worker-1"
  }
}
