output "openebs_memory_mib" {
  description = "Memory the OpenEBS pods request."
  value       = clusterstorage_storage_backend.openebs.footprint.memory_requests_bytes / 1048576
}

output "default_class_benchmark" {
  value = data.clusterstorage_storage_benchmark.default_class.summary
}

output "k3s_disk_write_mb_s" {
  value = { for n, b in data.clusterstorage_storage_benchmark.k3s_disk : n => floor(b.write.bandwidth_bytes_per_second / 1e6) }
}
