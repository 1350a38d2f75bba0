resource "clusterstorage_local_pv" "test" {
  name     = "acc-pv-file"
  node     = %q
  path     = %q
  capacity = "1Gi"
}
