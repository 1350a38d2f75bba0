resource "clusterstorage_storage_class" "test" {
  name                   = %q
  storage_provisioner    = "kubernetes.io/no-provisioner"
  allow_volume_expansion = %t
  labels                 = { tier = "nvme" }
}
