moved {
  from = kubernetes_storage_class_v1.local
  to   = clusterstorage_storage_class.test
}

resource "clusterstorage_storage_class" "test" {
  name                = %q
  storage_provisioner = "kubernetes.io/no-provisioner"
}
