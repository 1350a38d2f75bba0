resource "clusterstorage_local_pv" "test" {
  name                        = %q
  node                        = %q
  path                        = %q
  capacity                    = "1Gi"
  storage_class_name          = %q
  delete_directory_on_destroy = true
  force_delete_data           = true
}
