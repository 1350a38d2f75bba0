resource "clusterstorage_storage_class" "test" {
  name                   = %q
  storage_provisioner            = "kubernetes.io/no-provisioner"
  allow_volume_expansion = true
  mount_options          = ["noatime", "nodiratime"]
  labels                 = { "app.kubernetes.io/managed-by" = "terraform" }
  annotations            = { "example.com/tier" = "fast" }
  allowed_topologies = [{
    match_label_expressions = [{ key = "kubernetes.io/hostname", values = ["node-a", "node-b"] }]
  }]
}
