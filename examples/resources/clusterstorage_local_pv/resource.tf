# The StorageClass local volumes go with: no dynamic provisioner, and binding waits for the
# pod so the scheduler places it on the node the volume lives on.
resource "clusterstorage_storage_class" "local" {
  name                = "local-nvme"
  storage_provisioner = "kubernetes.io/no-provisioner"
  volume_binding_mode = "WaitForFirstConsumer"
  reclaim_policy      = "Retain"
}

# Replaces: ssh k8s3 sudo mkdir -p /mnt/disks/localdisk1 && chmod ..., a hand-written PV
# manifest and its node affinity.
resource "clusterstorage_local_pv" "postgres" {
  name               = "k8s3-localdisk1"
  node               = "k8s3"
  path               = "/mnt/disks/localdisk1"
  capacity           = "100Gi"
  storage_class_name = clusterstorage_storage_class.local.name

  directory_mode  = "0750"
  directory_owner = "999" # the postgres image's uid
  directory_group = "999"

  labels = { app = "postgres" }

  # Data stays on the node when the volume is destroyed (the default). To remove the directory
  # too, set delete_directory_on_destroy = true; a directory that still holds files is only
  # removed with force_delete_data = true.
}

# One volume per disk on every node, from a map.
locals {
  disks = {
    "k8s1-ssd1" = { node = "k8s1", path = "/mnt/ssd1" }
    "k8s2-ssd1" = { node = "k8s2", path = "/mnt/ssd1" }
  }
}

resource "clusterstorage_local_pv" "ssd" {
  for_each           = local.disks
  name               = each.key
  node               = each.value.node
  path               = each.value.path
  capacity           = "500Gi"
  storage_class_name = clusterstorage_storage_class.local.name
}
