resource "clusterstorage_local_pv" "test" {
  name                        = %q
  node                        = %q
  path                        = %q
  capacity                    = "1Gi"
  create_directory            = %t
  delete_directory_on_destroy = %t
  force_delete_data           = %t
  directory_mode              = %q
}
