resource "clusterstorage_volume_migration" "test" {
  namespace           = %q
  claim               = "data"
  storage_class       = %q
  target_node         = %q
  cross_node_transfer = %q
  image               = %q
  image_pull_policy   = "Never"
}
