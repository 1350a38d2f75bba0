# By resource identity (Terraform 1.12+, OpenTofu 1.12+): the claim migrated.
import {
  to = clusterstorage_volume_migration.postgres
  identity = {
    namespace = "db"
    claim     = "data-postgres-0"
  }
}
