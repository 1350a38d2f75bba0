# The same fio job on several StorageClasses, side by side: read IOPS, read latency and system CPU.
locals {
  classes = toset(["longhorn", "local-nvme", "openebs-hostpath"])
}

data "clusterstorage_storage_benchmark" "compare" {
  for_each = local.classes

  storage_class = each.key
  namespace     = "benchmarks"
  profile       = "database"
  size          = "200M"
  runtime       = "60s"
  max_age       = "24h"
}

output "comparison" {
  value = {
    for class, b in data.clusterstorage_storage_benchmark.compare : class => {
      read_iops       = floor(b.read.iops)
      read_latency_ms = b.read.latency_us.mean / 1000
      write_iops      = floor(b.write.iops)
      system_cpu      = b.cpu.system_percent
      summary         = b.summary
    }
  }
}
