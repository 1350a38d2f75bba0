# A claim this resource migrated, by <namespace>/<claim>.
import {
  to = clusterstorage_volume_migration.postgres
  id = "db/data-postgres-0"
}
