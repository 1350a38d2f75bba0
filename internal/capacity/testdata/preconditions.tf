data "clusterstorage_storage_capacity" "target" {
  node_path = %q
  nodes     = [%q]
}
