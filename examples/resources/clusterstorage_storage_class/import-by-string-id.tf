# A StorageClass made by kubectl or a chart, by its name.
import {
  to = clusterstorage_storage_class.local
  id = "local-nvme"
}
