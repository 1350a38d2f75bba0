locals {
  comparison = data.clusterstorage_storage_comparison.backends
  mib        = 1024 * 1024
  # Memory the storage system itself costs the cluster: the working set of its pods where the
  # metrics API is served, their requests otherwise; nothing for a bare disk or a local PV.
  memory_overhead_mib = { for name, r in local.comparison.results : name => (
    r.memory == null ? 0 : floor(coalesce(r.memory.usage_bytes, r.memory.requests_bytes) / local.mib)
  ) }
}

output "comparison" {
  description = "The seed article's table for this machine: one column per target, medians of the rounds with their spread, the IOPS ratio to the node's disk, and memory overhead."
  value       = local.comparison.table
}

output "summaries" {
  description = "One line per target, with the spread of its rounds."
  value       = { for name, r in local.comparison.results : name => r.summary }
}

output "warnings" {
  description = "What the comparison warns about: caches, files that fit in memory, spreads too large to rank."
  value       = local.comparison.warnings
}

output "chart_data" {
  description = "The numbers behind the comparison, for the demo's bar chart (bin/demochart): medians, and the lowest and highest round."
  value = { for name, r in local.comparison.results : name => {
    read_iops            = r.read.iops
    read_iops_min        = r.spread.read_iops.min
    read_iops_max        = r.spread.read_iops.max
    write_iops           = r.write.iops
    write_iops_min       = r.spread.write_iops.min
    write_iops_max       = r.spread.write_iops.max
    read_latency_ms      = r.read.latency_us.mean / 1000
    read_latency_ms_min  = r.spread.read_latency_mean.min / 1000
    read_latency_ms_max  = r.spread.read_latency_mean.max / 1000
    write_latency_ms     = r.write.latency_us.mean / 1000
    write_latency_ms_min = r.spread.write_latency_mean.min / 1000
    write_latency_ms_max = r.spread.write_latency_mean.max / 1000
    read_mib_s           = r.read.bandwidth_bytes_per_second / local.mib
    write_mib_s          = r.write.bandwidth_bytes_per_second / local.mib
    memory_overhead_mib  = local.memory_overhead_mib[name]
  } }
}
