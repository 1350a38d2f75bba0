list "clusterstorage_storage_class" "test" {
  provider         = clusterstorage
  include_resource = true
  config {
    storage_provisioner = %q
  }
}
