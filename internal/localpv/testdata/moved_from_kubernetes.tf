resource "kubernetes_persistent_volume_v1" "disk" {
  metadata {
    name = %q
  }
  capacity = "1Gi"
  path     = %q
  node     = %q
}
