# A three-node k3s cluster whose data lived on HDDs: move each node's k3s data directory to
# NVMe (one node at a time: k3s restarts on each), install OpenEBS hostpath without Mayastor on
# the NVMe disks, make it the default class (k3s's local-path loses its default mark), and fail
# the apply when it is below the database threshold.
#
# k3s gives `local-path` its default mark back whenever k3s restarts, leaving two default classes,
# unless its local-storage add-on is off: put `disable: [local-storage]` in
# /etc/rancher/k3s/config.yaml on the server nodes (or start k3s with --disable local-storage)
# before applying this. See README.md.

locals {
  # OpenEBS hostpath has one base path for every node: the NVMe mount, which must be the same on all.
  nvme_mounts = distinct([for n in var.nodes : n.nvme])
}

# Nodes move one after another; each depends on the previous one.
resource "clusterstorage_k3s_data_dir_migration" "k3s_1" {
  node   = "k3s-1"
  target = "${var.nodes["k3s-1"].nvme}/k3s"
  drain  = true
}

resource "clusterstorage_k3s_data_dir_migration" "k3s_2" {
  node       = "k3s-2"
  target     = "${var.nodes["k3s-2"].nvme}/k3s"
  drain      = true
  depends_on = [clusterstorage_k3s_data_dir_migration.k3s_1]
}

resource "clusterstorage_k3s_data_dir_migration" "k3s_3" {
  node       = "k3s-3"
  target     = "${var.nodes["k3s-3"].nvme}/k3s"
  drain      = true
  depends_on = [clusterstorage_k3s_data_dir_migration.k3s_2]
}

# OpenEBS with only the hostpath engine: ~180 MB of memory instead of Longhorn's ~1.5 GB.
resource "clusterstorage_storage_backend" "openebs" {
  type = "openebs"
  openebs = {
    mayastor_enabled       = false
    hostpath_base_path     = "${local.nvme_mounts[0]}/openebs"
    hostpath_default_class = true
  }

  lifecycle {
    precondition {
      condition     = length(local.nvme_mounts) == 1
      error_message = "OpenEBS hostpath takes one base path for all nodes, but var.nodes has different NVMe mounts: ${join(", ", local.nvme_mounts)}."
    }
  }

  depends_on = [clusterstorage_k3s_data_dir_migration.k3s_3]
}

# Measured once a day (data sources are read on every plan; max_age reuses the result).
data "clusterstorage_storage_benchmark" "default_class" {
  storage_class = clusterstorage_storage_backend.openebs.storage_classes[0]
  profile       = "database"
  max_age       = "24h"

  lifecycle {
    postcondition {
      condition     = self.read.iops >= var.min_read_iops && self.write.latency_us.p99 <= var.max_write_p99_ms * 1000
      error_message = "OpenEBS hostpath is below the database threshold: ${self.summary}"
    }
  }
}

# The node-level numbers the migration was for (sequential writes: 196 MB/s on the HDD,
# 2,500 MB/s on NVMe in the seed article), reported without failing the apply.
data "clusterstorage_storage_benchmark" "k3s_disk" {
  for_each  = var.nodes
  node      = each.key
  node_path = each.value.nvme
  profile   = "sequential_write"
  runtime   = "30s"
  max_age   = "168h"

  depends_on = [clusterstorage_k3s_data_dir_migration.k3s_3]
}

check "k3s_disks_are_fast" {
  assert {
    condition     = alltrue([for b in data.clusterstorage_storage_benchmark.k3s_disk : b.write.bandwidth_bytes_per_second > 1e9])
    error_message = "A k3s data disk writes below 1 GB/s sequentially."
  }
}
