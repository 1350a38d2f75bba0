data "clusterstorage_storage_capacity" %q {
  node_path = %q
  nodes     = [%q]
}
