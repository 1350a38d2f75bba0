resource "clusterstorage_storage_class" "a" {
  name        = %q
  storage_provisioner = "kubernetes.io/no-provisioner"
  default     = %t
}
resource "clusterstorage_storage_class" "b" {
  name        = %q
  storage_provisioner = "kubernetes.io/no-provisioner"
  default     = %t
  depends_on  = [clusterstorage_storage_class.a]
}
