# The quickstart reproduces the seed article's comparison on each of your nodes: the same fio job
# (8k random I/O, 70 % reads, iodepth 16) against a local PersistentVolume on every node, against
# the node's disk directly, and against OpenEBS's dynamic hostpath class on the first node, in
# interleaved rounds (one target at a time, so they never share a disk), with the memory
# OpenEBS's pods use. The table says which node each figure came from.

terraform {
  required_providers {
    clusterstorage = {
      source = "clusterstorage/clusterstorage"
    }
  }
}

provider "clusterstorage" {
  kubernetes {
    config_path = var.kubeconfig
  }
  ssh {
    user             = var.ssh_user
    private_key_path = var.ssh_key_path
    known_hosts_path = var.known_hosts_path
  }
  nodes = { for name, n in var.nodes : name => { host = n.host, port = n.port } }
}

locals {
  # Node names in order; "node 1" is the first of them, and so on.
  node_names = sort(keys(var.nodes))
  node_label = { for i, name in local.node_names : name => "node ${i + 1}" }
  first_node = local.node_names[0]
}

# Local volumes: no dynamic provisioner, binding waits for the pod.
resource "clusterstorage_storage_class" "local" {
  name                = "local-disks"
  storage_provisioner = "kubernetes.io/no-provisioner"
  volume_binding_mode = "WaitForFirstConsumer"
  reclaim_policy      = "Retain"
}

# One local volume on every node; its directory is made on that node over SSH.
resource "clusterstorage_local_pv" "disk" {
  for_each           = var.nodes
  name               = "quickstart-${replace(local.node_label[each.key], " ", "")}"
  node               = each.key
  path               = "${each.value.data_dir}/vol"
  capacity           = "1Gi"
  storage_class_name = clusterstorage_storage_class.local.name
}

# OpenEBS, hostpath engine only (Mayastor, LVM, ZFS and the log add-ons off), from a chart on
# disk. A real cluster would leave repository and chart at their defaults
# (https://openebs.github.io/openebs). Its volumes live below the first node's data directory
# (the base path is one for all nodes: on a real cluster, pick a path every node has).
resource "clusterstorage_storage_backend" "openebs" {
  type       = "openebs"
  repository = ""
  chart      = var.openebs_chart
  openebs = {
    hostpath_base_path = "${var.nodes[local.first_node].data_dir}/openebs"
  }
  timeouts = {
    create = "5m"
  }
}

# One fio job on every target, in var.rounds interleaved rounds: medians, spread, the ratio of
# each target to the first node's disk, and the memory of OpenEBS's pods.
data "clusterstorage_storage_comparison" "backends" {
  targets = merge(
    { for name, n in var.nodes : "disk, ${local.node_label[name]}" => { node_path = n.data_dir, node = name } },
    { for name, n in var.nodes : "local PV, ${local.node_label[name]}" => { storage_class = clusterstorage_storage_class.local.name, node = name } },
    {
      "OpenEBS hostpath, node 1" = {
        storage_class     = clusterstorage_storage_backend.openebs.storage_classes[0]
        backend_namespace = clusterstorage_storage_backend.openebs.namespace
        node              = local.first_node
      }
    },
  )
  baseline = "disk, node 1"
  rounds   = var.rounds
  profile  = "database"
  runtime  = var.runtime

  image             = var.fio_image
  image_pull_policy = "IfNotPresent"

  depends_on = [clusterstorage_local_pv.disk]
}

check "local_volumes_are_fast_enough" {
  assert {
    condition = alltrue([
      for name, r in data.clusterstorage_storage_comparison.backends.results : r.read.iops >= var.min_read_iops if startswith(name, "local PV")
    ])
    error_message = "A local volume reads below ${var.min_read_iops} IOPS: ${join(", ", [
      for name, r in data.clusterstorage_storage_comparison.backends.results : "${name} ${floor(r.read.iops)}" if startswith(name, "local PV")
    ])}."
  }
}
