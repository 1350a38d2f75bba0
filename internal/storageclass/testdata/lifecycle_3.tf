resource "clusterstorage_storage_class" "test" {
  name                = %q
  storage_provisioner         = "example.com/fast"
  parameters          = { type = "nvme" }
  reclaim_policy      = "Retain"
  volume_binding_mode = "WaitForFirstConsumer"
}
