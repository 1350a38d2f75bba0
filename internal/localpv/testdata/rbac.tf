resource "clusterstorage_local_pv" "test" {
  name               = %q
  node               = %q
  path               = %q
  capacity           = %q
  storage_class_name = "acc-local-rbac"
}
