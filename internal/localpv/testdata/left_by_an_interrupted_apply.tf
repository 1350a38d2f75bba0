resource "clusterstorage_local_pv" "test" {
  name     = %q
  node     = %q
  path     = %q
  capacity = "2Gi"
  labels   = { app = "db" }
}
