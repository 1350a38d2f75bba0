# A claim this resource migrated (its annotation clusterstorage.io/migration records the
# migration), by <namespace>/<claim>.
terraform import clusterstorage_volume_migration.postgres db/data-postgres-0
