resource "clusterstorage_local_pv" "test" {
  name                        = %q
  node                        = %q
  path                        = %q
  capacity                    = "1Gi"
  delete_directory_on_destroy = true
  force_delete_data           = true
}
