# Which storage for a database on worker-1? The same fio job (the `database` profile) on the
# node's own disk, a local-PV class and Longhorn, in three interleaved rounds (A B C, B C A,
# C A B), so drift on the machine hits every target alike. Each result has the medians, the
# spread of the rounds, the ratio to the node's disk (and whether it exceeds the spread), and the
# memory of Longhorn's pods.
data "clusterstorage_storage_comparison" "db" {
  targets = {
    disk     = { node_path = "/mnt/data" }
    local_pv = { storage_class = "local-disks" }
    longhorn = { storage_class = "longhorn", backend_namespace = "longhorn-system" }
  }
  baseline  = "disk"
  rounds    = 3
  node      = "worker-1"
  namespace = "benchmarks"
  profile   = "database"
  runtime   = "30s"
  max_age   = "24h" # reuse the results for a day instead of running fio on every plan
}

# The seed article's table: a column per target, medians ± coefficient of variation.
output "table" {
  value = data.clusterstorage_storage_comparison.db.table
}

# Longhorn's read IOPS relative to the bare disk, when the difference exceeds the spread.
output "longhorn_read_iops_vs_disk" {
  value = (data.clusterstorage_storage_comparison.db.results["longhorn"].vs_baseline["read_iops"].significant
    ? data.clusterstorage_storage_comparison.db.results["longhorn"].vs_baseline["read_iops"].ratio
  : null)
}

# Memory the storage system costs: the working set of Longhorn's pods (null without metrics-server).
output "longhorn_memory_mib" {
  value = data.clusterstorage_storage_comparison.db.results["longhorn"].memory.usage_bytes / 1048576
}
