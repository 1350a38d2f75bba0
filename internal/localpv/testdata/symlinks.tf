resource "clusterstorage_local_pv" "test" {
  name           = %q
  node           = %q
  path           = %q
  capacity       = "1Gi"
  directory_mode = %q
}
