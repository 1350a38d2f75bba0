moved {
  from = kubernetes_persistent_volume_v1.disk
  to   = clusterstorage_local_pv.test
}

resource "clusterstorage_local_pv" "test" {
  name     = %q
  node     = %q
  path     = %q
  capacity = "1Gi"
}
