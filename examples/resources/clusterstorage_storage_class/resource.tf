# Local volumes: no dynamic provisioner, and binding waits for the pod so the scheduler
# picks the node the volume lives on.
resource "clusterstorage_storage_class" "local" {
  name                = "local-nvme"
  storage_provisioner = "kubernetes.io/no-provisioner"
  volume_binding_mode = "WaitForFirstConsumer"
  reclaim_policy      = "Retain"
}

# OpenEBS hostpath as the cluster's default class: k3s's local-path loses its default mark in
# the same apply, so the cluster never has two defaults.
resource "clusterstorage_storage_class" "hostpath" {
  name                   = "openebs-hostpath-fast"
  storage_provisioner    = "openebs.io/local"
  volume_binding_mode    = "WaitForFirstConsumer"
  allow_volume_expansion = false
  default                = true

  annotations = {
    "cas.openebs.io/config" = <<-EOT
      - name: StorageType
        value: hostpath
      - name: BasePath
        value: /mnt/nvme/openebs
    EOT
  }

  allowed_topologies = [{
    match_label_expressions = [{
      key    = "kubernetes.io/hostname"
      values = ["k3s-node-1", "k3s-node-2"]
    }]
  }]
}
