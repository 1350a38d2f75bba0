resource "clusterstorage_local_pv" "a" {
  name                        = %q
  node                        = %q
  path                        = %q
  capacity                    = "1Gi"
  delete_directory_on_destroy = true
}

resource "clusterstorage_local_pv" "b" {
  name                        = %q
  node                        = %q
  path                        = %q
  capacity                    = "1Gi"
  delete_directory_on_destroy = true
}
