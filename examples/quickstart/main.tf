# The quickstart reproduces the seed article's comparison on one node: the same fio job
# (8k random I/O, 70 % reads, iodepth 16) against a local PersistentVolume, against OpenEBS's
# dynamic hostpath class, and against the node's disk directly, as outputs and a check block.
# The three runs follow each other (depends_on) so they do not share the disk.

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

locals {
  job = {
    profile = "database"
    runtime = var.runtime
  }
}

# fio in a pod, on a temporary claim of the local class (it binds one of the volumes above).
data "clusterstorage_storage_benchmark" "local_pv" {
  storage_class     = clusterstorage_storage_class.local.name
  node              = var.node
  profile           = local.job.profile
  runtime           = local.job.runtime
  image             = var.fio_image
  image_pull_policy = "IfNotPresent"
  host_network      = true

  depends_on = [clusterstorage_local_pv.disk]
}

# fio in a pod, on a dynamically provisioned OpenEBS hostpath volume.
data "clusterstorage_storage_benchmark" "openebs_hostpath" {
  storage_class     = clusterstorage_storage_backend.openebs.storage_classes[0]
  node              = var.node
  profile           = local.job.profile
  runtime           = local.job.runtime
  image             = var.fio_image
  image_pull_policy = "IfNotPresent"
  host_network      = true

  depends_on = [data.clusterstorage_storage_benchmark.local_pv]
}

# fio over SSH, straight on the node's disk: the baseline.
data "clusterstorage_storage_benchmark" "node_path" {
  node      = var.node
  node_path = var.data_dir
  profile   = local.job.profile
  runtime   = local.job.runtime

  depends_on = [data.clusterstorage_storage_benchmark.openebs_hostpath]
}

check "local_volume_is_fast_enough" {
  assert {
    condition     = data.clusterstorage_storage_benchmark.local_pv.read.iops >= var.min_read_iops
    error_message = "The local volume reads ${floor(data.clusterstorage_storage_benchmark.local_pv.read.iops)} IOPS, below ${var.min_read_iops}."
  }
}
