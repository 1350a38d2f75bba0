# Where k3s's data will go: the filesystem under /mnt/nvme on worker-1, and the disk behind it.
data "clusterstorage_storage_capacity" "k3s_target" {
  node_path = "/mnt/nvme"
  nodes     = ["worker-1"]
}

# The migration only starts when the target has room for the data dir plus a margin, and is on a
# non-rotational disk; otherwise the plan stops with the reason, before anything is copied.
resource "clusterstorage_k3s_data_dir_migration" "nvme" {
  node   = "worker-1"
  target = "/mnt/nvme/k3s"

  lifecycle {
    precondition {
      condition     = data.clusterstorage_storage_capacity.k3s_target.filesystems["worker-1"].available_bytes >= 50 * 1024 * 1024 * 1024
      error_message = "The k3s target needs 50 GiB free: ${data.clusterstorage_storage_capacity.k3s_target.summary}"
    }
    precondition {
      condition     = data.clusterstorage_storage_capacity.k3s_target.filesystems["worker-1"].rotational == false
      error_message = "The k3s target must be on an SSD or NVMe, not a spinning disk: ${data.clusterstorage_storage_capacity.k3s_target.summary}"
    }
    precondition {
      condition     = !data.clusterstorage_storage_capacity.k3s_target.filesystems["worker-1"].read_only
      error_message = "The k3s target is mounted read-only."
    }
  }
}

# The root filesystem of every node: a warning (not an error) when one is over 90 % full, as the
# root partition at 98 % that started the k3s move.
check "root_filesystems" {
  data "clusterstorage_storage_capacity" "root" {
    node_path = "/"
  }

  assert {
    condition     = alltrue([for fs in data.clusterstorage_storage_capacity.root.filesystems : fs.used_percent < 90])
    error_message = data.clusterstorage_storage_capacity.root.summary
  }
}

# What a StorageClass can still provision: for local volumes the Available PVs (the largest is
# the biggest claim that can still bind); for a CSI driver its CSIStorageCapacity objects.
data "clusterstorage_storage_capacity" "local" {
  storage_class = "local-nvme"

  lifecycle {
    postcondition {
      condition     = self.available_volumes != null && self.available_volumes.largest_bytes >= 100 * 1024 * 1024 * 1024
      error_message = "No local-nvme volume of 100 GiB is left: ${self.summary}"
    }
  }
}

# Longhorn's own view of its disks on every node, and the space left to schedule replicas to
# (as Longhorn counts it with storage-over-provisioning-percentage at 100).
data "clusterstorage_storage_capacity" "longhorn" {
  backend = {
    type      = "longhorn"
    namespace = "longhorn-system"
  }
}

output "longhorn_free_after_scheduled" {
  value = {
    for name, n in data.clusterstorage_storage_capacity.longhorn.longhorn_nodes :
    name => n.storage_maximum_bytes - n.storage_reserved_bytes - n.storage_scheduled_bytes
  }
}

# OpenEBS hostpath volumes land under the class's base path: its filesystem on each node.
data "clusterstorage_storage_capacity" "openebs" {
  backend = {
    type      = "openebs"
    namespace = "openebs"
  }

  lifecycle {
    postcondition {
      condition     = self.totals.min_available_bytes >= 20 * 1024 * 1024 * 1024
      error_message = "A node has less than 20 GiB for OpenEBS hostpath volumes: ${self.summary}"
    }
  }
}
