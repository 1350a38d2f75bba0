# OpenEBS LocalPV hostpath only (Mayastor, LVM, ZFS, Loki and Alloy off): about 180 MB.
resource "clusterstorage_storage_backend" "openebs" {
  type = "openebs"
  # version = "4.3.0" (the pinned default); repository https://openebs.github.io/openebs

  openebs = {
    hostpath_base_path     = "/mnt/disks/openebs"
    hostpath_default_class = true
  }
}

# Longhorn on a small cluster: two replicas, data kept close to its pod.
resource "clusterstorage_storage_backend" "longhorn" {
  type    = "longhorn"
  version = "1.8.1"

  longhorn = {
    default_replica_count = 2
    default_data_locality = "best-effort"
    default_data_path     = "/var/lib/longhorn/"
    default_class         = false
    ui_enabled            = false
  }

  # Raw values and set entries are applied after the typed settings; contradicting a typed
  # setting is an error at plan.
  values = <<-EOT
    longhornManager:
      tolerations:
        - key: storage
          operator: Exists
  EOT
  set = [
    { name = "defaultSettings.storageMinimalAvailablePercentage", value = "15", type = "string" },
  ]

  timeouts = {
    create = "20m"
  }
}

# Air-gapped: a chart archive copied next to the configuration.
resource "clusterstorage_storage_backend" "offline" {
  type       = "openebs"
  namespace  = "openebs-offline"
  repository = ""
  chart      = "${path.module}/charts/openebs-4.3.0.tgz"
  version    = "4.3.0"
}

output "backend_memory_requests_bytes" {
  value = {
    openebs  = clusterstorage_storage_backend.openebs.footprint.memory_requests_bytes
    longhorn = clusterstorage_storage_backend.longhorn.footprint.memory_requests_bytes
  }
}
