locals {
  results = {
    "node disk (fio)"  = data.clusterstorage_storage_benchmark.node_path
    "local PV"         = data.clusterstorage_storage_benchmark.local_pv
    "OpenEBS hostpath" = data.clusterstorage_storage_benchmark.openebs_hostpath
  }
  # Memory the storage system itself costs the cluster (its pods' requests; usage where the
  # metrics API is served): nothing for a bare disk or a local PV.
  openebs_memory = coalesce(
    clusterstorage_storage_backend.openebs.footprint.memory_usage_bytes,
    clusterstorage_storage_backend.openebs.footprint.memory_requests_bytes,
  )
  memory_overhead = {
    "node disk (fio)"  = 0
    "local PV"         = 0
    "OpenEBS hostpath" = floor(local.openebs_memory / local.mib)
  }

  columns = keys(local.results)
  mib     = 1024 * 1024
  rows = [
    ["read IOPS", [for c in local.columns : format("%.0f", local.results[c].read.iops)]],
    ["read bandwidth", [for c in local.columns : format("%.1f MiB/s", local.results[c].read.bandwidth_bytes_per_second / local.mib)]],
    ["read latency (mean)", [for c in local.columns : format("%.2f ms", local.results[c].read.latency_us.mean / 1000)]],
    ["write IOPS", [for c in local.columns : format("%.0f", local.results[c].write.iops)]],
    ["write bandwidth", [for c in local.columns : format("%.1f MiB/s", local.results[c].write.bandwidth_bytes_per_second / local.mib)]],
    ["write latency (mean)", [for c in local.columns : format("%.2f ms", local.results[c].write.latency_us.mean / 1000)]],
    ["CPU sys", [for c in local.columns : format("%.1f %%", local.results[c].cpu.system_percent)]],
    ["memory overhead", [for c in local.columns : format("%d MiB", local.memory_overhead[c])]],
  ]
}

output "comparison" {
  description = "The seed article's table for this machine: one column per target."
  value = join("\n", concat(
    [format("%-22s%s", "fio database profile", join("", [for c in local.columns : format("%18s", c)]))],
    [for r in local.rows : format("%-22s%s", r[0], join("", [for v in r[1] : format("%18s", v)]))],
  ))
}

output "summaries" {
  description = "One line per target."
  value       = { for c in local.columns : c => local.results[c].summary }
}

output "chart_data" {
  description = "The numbers behind the comparison, for the demo's bar chart (bin/demochart)."
  value = { for c in local.columns : c => {
    read_iops           = local.results[c].read.iops
    write_iops          = local.results[c].write.iops
    read_latency_ms     = local.results[c].read.latency_us.mean / 1000
    write_latency_ms    = local.results[c].write.latency_us.mean / 1000
    read_mib_s          = local.results[c].read.bandwidth_bytes_per_second / local.mib
    write_mib_s         = local.results[c].write.bandwidth_bytes_per_second / local.mib
    memory_overhead_mib = local.memory_overhead[c]
  } }
}
