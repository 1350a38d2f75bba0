# By resource identity (Terraform 1.12+, OpenTofu 1.12+): the claim migrated.
import {
  to = clusterstorage_volume_migration.off_longhorn["monitoring/prometheus-data"]
  identity = {
    namespace = "monitoring"
    claim     = "prometheus-data"
  }
}
