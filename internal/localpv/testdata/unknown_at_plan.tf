resource "terraform_data" "node" {
  input = %[1]q
}
resource "terraform_data" "disk" {
  input = ["nvme"]
}
provider "clusterstorage" {
  kubernetes {
    config_path = %[2]q
  }
  ssh {
    user             = %[3]q
    private_key_path = %[4]q
    known_hosts_path = %[5]q
  }
  nodes = { for n in toset([terraform_data.node.output]) : n => { host = %[6]q, port = %[7]d } }
}
resource "clusterstorage_local_pv" "test" {
  name          = %[8]q
  node          = %[1]q
  path          = %[9]q
  capacity      = "1Gi"
  node_affinity = [for v in terraform_data.disk.output : %[10]s]
  %[11]s
}
