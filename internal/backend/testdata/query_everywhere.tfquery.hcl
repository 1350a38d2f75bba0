# TestAccStorageBackend_adoptWithQuery: the releases of every namespace, identities only.
list "clusterstorage_storage_backend" "everywhere" {
  provider = clusterstorage
}
