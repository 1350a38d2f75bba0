resource "kubernetes_storage_class_v1" "local" {
  metadata {
    name = %q
  }
  storage_provisioner = "kubernetes.io/no-provisioner"
}
