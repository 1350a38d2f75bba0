resource "clusterstorage_local_pv" "test" {
  count    = 30
  name     = "%s-${count.index}"
  node     = %q
  path     = "%s/vol-${count.index}"
  capacity = "1Gi"
}
