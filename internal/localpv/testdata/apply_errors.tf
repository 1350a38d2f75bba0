resource "clusterstorage_local_pv" "test" {
  name     = "acc-pv-unknown-node"
  node     = "no-such-node"
  path     = %q
  capacity = "1Gi"
}
