output "moved" {
  description = "Each migrated claim: the volume it is on now, the Longhorn volume kept (until delete_sources), and how long its workload was stopped."
  value = {
    for k, m in clusterstorage_volume_migration.off_longhorn : k => {
      volume           = m.volume
      source_volume    = m.source_volume
      downtime_seconds = m.downtime_seconds
    }
  }
}
