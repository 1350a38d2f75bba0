resource "clusterstorage_storage_class" "test" {
  name                = %q
  storage_provisioner = "kubernetes.io/no-provisioner"
}
