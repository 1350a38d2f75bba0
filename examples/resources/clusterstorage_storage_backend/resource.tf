# OpenEBS LocalPV hostpath only (Mayastor, LVM, ZFS, Loki and Alloy off).
resource "clusterstorage_storage_backend" "openebs" {
  type = "openebs"
  # version = "4.4.0" (the pinned default; 4.0.x, 4.1.x, 4.2.x and 4.4.x are accepted);
  # repository https://openebs.github.io/openebs

  openebs = {
    hostpath_base_path     = "/mnt/disks/openebs"
    hostpath_default_class = true
    # The cluster already has the VolumeSnapshot CRDs (e.g. from a snapshot controller): leave them.
    volume_snapshot_crds = false
  }
}

# Mayastor on three nodes labelled openebs.io/engine=mayastor (its io-engine runs only there;
# its etcd wants three nodes). A missing label or too few nodes fail the apply before installing.
resource "clusterstorage_storage_backend" "mayastor" {
  type         = "openebs"
  namespace    = "mayastor"
  release_name = "mayastor" # its class is mayastor-single-replica
  preflight    = true       # hugepages and nvme_tcp on each labelled node, over SSH

  openebs = {
    mayastor_enabled    = true
    hostpath_class_name = "mayastor-hostpath"
  }
}

# Longhorn on a small cluster: two replicas, data kept close to its pod. Longhorn upgrades one
# minor version at a time: from 1.10.x, set 1.11.3 and apply, then 1.12.1 (a skip or a downgrade
# is refused at plan, naming the versions to go through).
resource "clusterstorage_storage_backend" "longhorn" {
  type    = "longhorn"
  version = "1.12.1"

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
  chart      = "${path.module}/charts/openebs-4.4.0.tgz"
  version    = "4.4.0"
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
