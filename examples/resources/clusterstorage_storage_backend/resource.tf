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

  # Raw values (YAML documents, merged in order), then set and set_sensitive entries, are
  # applied after the typed settings; contradicting a typed setting is an error at plan.
  values = [
    yamlencode({ longhornManager = { tolerations = [{ key = "storage", operator = "Exists" }] } }),
    <<-EOT
    longhornDriver:
      tolerations:
        - key: storage
          operator: Exists
    EOT
  ]
  set = [
    { name = "defaultSettings.storageMinimalAvailablePercentage", value = "15", type = "string" },
  ]
  set_sensitive = [
    { name = "defaultBackupStore.backupTargetCredentialSecret", value = var.backup_secret_name },
  ]
  max_history = 5

  timeouts = {
    create = "20m"
  }
}

# A private repository that wants a TLS client certificate.
resource "clusterstorage_storage_backend" "private" {
  type                 = "openebs"
  namespace            = "openebs-private"
  repository           = "https://charts.example.internal/openebs"
  repository_ca_file   = "${path.module}/certs/ca.pem"
  repository_cert_file = "${path.module}/certs/client.pem"
  repository_key_file  = "${path.module}/certs/client-key.pem"
}

# Air-gapped: a chart archive copied next to the configuration.
resource "clusterstorage_storage_backend" "offline" {
  type       = "openebs"
  namespace  = "openebs-offline"
  repository = ""
  chart      = "${path.module}/charts/openebs-4.3.0.tgz"
  version    = "4.3.0"
}

variable "backup_secret_name" {
  type      = string
  sensitive = true
  default   = "longhorn-backup-credentials"
}

output "backend_memory_requests_bytes" {
  value = {
    openebs  = clusterstorage_storage_backend.openebs.footprint.memory_requests_bytes
    longhorn = clusterstorage_storage_backend.longhorn.footprint.memory_requests_bytes
  }
}
