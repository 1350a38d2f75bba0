# Move PostgreSQL's claim from Longhorn to OpenEBS hostpath. The claim keeps its name, so the
# StatefulSet that names it runs on unchanged; downtime is the delta copied after the scale-down
# and the verification of every file.
resource "clusterstorage_volume_migration" "postgres" {
  namespace     = "db"
  claim         = "data-postgres-0"
  storage_class = "openebs-hostpath"
  size          = "20Gi" # default: the size of the source volume

  # The Longhorn volume is kept (reclaim policy Retain) until this says it may go.
  delete_source = false

  timeouts = {
    create = "2h"
  }
}

# Every claim of the Longhorn class, one migration each.
data "clusterstorage_volumes" "on_longhorn" {
  storage_class = "longhorn"
  # Keep listing the claims once they have moved, or the next plan would forget their migrations.
  include_migrated = true
}

resource "clusterstorage_volume_migration" "off_longhorn" {
  for_each = { for v in data.clusterstorage_volumes.on_longhorn.volumes : v.key => v }

  namespace     = each.value.namespace
  claim         = each.value.name
  storage_class = "openebs-hostpath"
}

output "downtime_seconds" {
  value = clusterstorage_volume_migration.postgres.downtime_seconds
}
