# The quickstart reproduces the seed article's comparison on one node: the same fio job
# (8k random I/O, 70 % reads, iodepth 16) against a local PersistentVolume, against OpenEBS's
# dynamic hostpath class, and against the node's disk directly, in interleaved rounds (one
# target at a time, so they never share the disk), with the memory OpenEBS's pods use.

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
  nodes = {
    (var.node) = { host = var.ssh_host, port = var.ssh_port }
  }
}

# Local volumes: no dynamic provisioner, binding waits for the pod.
resource "clusterstorage_storage_class" "local" {
  name                = "local-disks"
  storage_provisioner = "kubernetes.io/no-provisioner"
  volume_binding_mode = "WaitForFirstConsumer"
  reclaim_policy      = "Retain"
}

# Two local volumes; their directories are made on the node over SSH.
resource "clusterstorage_local_pv" "disk" {
  for_each           = toset(["vol1", "vol2"])
  name               = "quickstart-${each.key}"
  node               = var.node
  path               = "${var.data_dir}/${each.key}"
  capacity           = "1Gi"
  storage_class_name = clusterstorage_storage_class.local.name
}

# OpenEBS, hostpath engine only (Mayastor, LVM, ZFS and the log add-ons off), from a chart on
# disk. A real cluster would leave repository and chart at their defaults
# (https://openebs.github.io/openebs).
resource "clusterstorage_storage_backend" "openebs" {
  type       = "openebs"
  repository = ""
  chart      = var.openebs_chart
  openebs = {
    hostpath_base_path = "${var.data_dir}/openebs"
  }
  timeouts = {
    create = "5m"
  }
}

# One fio job on the three targets, in var.rounds interleaved rounds: medians, spread, the
# ratio of each target to the node's disk, and the memory of OpenEBS's pods.
data "clusterstorage_storage_comparison" "backends" {
  targets = {
    "node disk (fio)" = { node_path = var.data_dir }
    "local PV"        = { storage_class = clusterstorage_storage_class.local.name }
    "OpenEBS hostpath" = {
      storage_class     = clusterstorage_storage_backend.openebs.storage_classes[0]
      backend_namespace = clusterstorage_storage_backend.openebs.namespace
    }
  }
  baseline = "node disk (fio)"
  rounds   = var.rounds
  node     = var.node
  profile  = "database"
  runtime  = var.runtime

  image             = var.fio_image
  image_pull_policy = "IfNotPresent"
  host_network      = true

  depends_on = [clusterstorage_local_pv.disk]
}

check "local_volume_is_fast_enough" {
  assert {
    condition     = data.clusterstorage_storage_comparison.backends.results["local PV"].read.iops >= var.min_read_iops
    error_message = "The local volume reads ${floor(data.clusterstorage_storage_comparison.backends.results["local PV"].read.iops)} IOPS, below ${var.min_read_iops}."
  }
}
