resource "clusterstorage_storage_backend" "openebs" {
  type       = "openebs"
  repository = %q
  version    = "4.4.0"
  namespace  = %q
  openebs = {
    hostpath_class_name = %q
    hostpath_base_path  = %q
    # the cluster may have the VolumeSnapshot CRDs already (the demo's OpenEBS, a snapshot controller)
    volume_snapshot_crds = false
  }
}

data "clusterstorage_storage_capacity" "test" {
  backend = {
    type      = clusterstorage_storage_backend.openebs.type
    namespace = clusterstorage_storage_backend.openebs.namespace
  }
  nodes = [%q]

  lifecycle {
    postcondition {
      condition     = self.totals.min_available_bytes >= 10485760
      error_message = "less than 10 MiB for hostpath volumes: ${self.summary}"
    }
  }
}
