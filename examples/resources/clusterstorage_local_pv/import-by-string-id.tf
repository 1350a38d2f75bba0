# A local PersistentVolume, by its name.
import {
  to = clusterstorage_local_pv.postgres
  id = "k8s3-localdisk1"
}
