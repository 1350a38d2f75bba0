# A release installed with helm, by <namespace>/<release_name>; what is read back is said below.
import {
  to = clusterstorage_storage_backend.longhorn
  id = "longhorn-system/longhorn"
}
