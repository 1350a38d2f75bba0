resource "terraform_data" "zones" {
  input = ["zone-a", "zone-b"]
}
resource "clusterstorage_storage_class" "test" {
  name                = %q
  storage_provisioner = "kubernetes.io/no-provisioner"
  allowed_topologies = [for z in toset(terraform_data.zones.output) : {
    match_label_expressions = [{ key = "topology.kubernetes.io/zone", values = [z] }]
  }]
}
