# Capacity check for a database: the `database` profile (8k random I/O, 70 % reads, iodepth 16,
# O_DIRECT) through a temporary claim of the class. The result is cached in the cluster for a day,
# so plans do not run fio every time.
data "clusterstorage_storage_benchmark" "db" {
  storage_class = "local-nvme"
  namespace     = "benchmarks"
  profile       = "database"
  max_age       = "24h"

  lifecycle {
    # Stops the plan when the class is too slow for the database.
    postcondition {
      condition     = self.read.iops >= 5000 && self.write.latency_us.p99 <= 5000
      error_message = "local-nvme is too slow for the database: ${self.summary}"
    }
  }
}

# The same requirement as a `check` block: a warning that does not stop the plan.
check "openebs_hostpath_fast_enough" {
  data "clusterstorage_storage_benchmark" "hostpath" {
    storage_class = "openebs-hostpath"
    namespace     = "benchmarks"
    profile       = "database"
    runtime       = "30s"
    max_age       = "24h"
  }

  assert {
    condition     = data.clusterstorage_storage_benchmark.hostpath.read.iops >= 5000
    error_message = "openebs-hostpath reads ${floor(data.clusterstorage_storage_benchmark.hostpath.read.iops)} IOPS, fewer than 5000."
  }
  assert {
    condition     = data.clusterstorage_storage_benchmark.hostpath.write.latency_us.p99 <= 5000
    error_message = "openebs-hostpath p99 write latency is ${data.clusterstorage_storage_benchmark.hostpath.write.latency_us.p99} µs, above 5 ms."
  }
}

# A node's disk directly, over SSH (fio must be installed on the node): sequential writes.
data "clusterstorage_storage_benchmark" "node_disk" {
  node      = "worker-1"
  node_path = "/mnt/data"
  profile   = "sequential_write"
  max_age   = "168h"
}

output "node_disk_write_mb_per_second" {
  value = data.clusterstorage_storage_benchmark.node_disk.write.bandwidth_bytes_per_second / 1e6
}
