# TestAccStorageBackend_adoptWithQuery: the releases of the namespace %[1]q, with the settings an
# import records (acctest.AdoptQuery's classes and volumes follow).
list "clusterstorage_storage_backend" "openebs" {
  provider         = clusterstorage
  include_resource = true
  config {
    namespace = %[1]q
  }
}

