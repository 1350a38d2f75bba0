resource "clusterstorage_volume_migration" "test" {
  namespace          = %q
  claim              = "data"
  storage_class      = %q
  target_node        = %q
  image              = %q
  image_pull_policy  = "Never"
  restore_on_destroy = %t
}
