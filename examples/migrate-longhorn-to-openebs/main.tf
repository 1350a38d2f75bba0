# From Longhorn to OpenEBS hostpath on a cluster that runs both: adopt the Longhorn release the
# helm CLI installed, install OpenEBS with only its hostpath engine, move every claim of the
# Longhorn class onto it (each claim keeps its name: the Deployments and StatefulSets that name it
# run on unchanged), then let the old volumes go and remove Longhorn. README.md has the steps.

provider "clusterstorage" {
  kubernetes {
    config_path = var.kubeconfig
  }
}

# The Longhorn that is there. Adopt it first, once:
#   terraform import 'clusterstorage_storage_backend.longhorn[0]' longhorn-system/longhorn
resource "clusterstorage_storage_backend" "longhorn" {
  count = var.remove_longhorn ? 0 : 1

  type      = "longhorn"
  namespace = "longhorn-system"

  # Adopted only to be removed: this configuration never upgrades or reconfigures it, whatever
  # its version and values are.
  lifecycle {
    ignore_changes = all
  }
}

# OpenEBS, hostpath engine only (Mayastor, LVM, ZFS and the log add-ons off).
resource "clusterstorage_storage_backend" "openebs" {
  type = "openebs"
  openebs = {
    hostpath_base_path = var.hostpath_base_path
  }
}

# Every claim of the Longhorn class, with the workloads that mount it. include_migrated keeps the
# claims in the list once they have moved, so their migrations stay in the state.
data "clusterstorage_volumes" "on_longhorn" {
  storage_class    = var.longhorn_class
  include_migrated = true
}

# One migration per claim: copied while the workload runs, the workload stopped for the last
# delta and the verification, the claim swapped onto the new volume, the workload started again.
# The Longhorn volume is kept (reclaim policy Retain) until delete_sources says it may go.
resource "clusterstorage_volume_migration" "off_longhorn" {
  for_each = { for v in data.clusterstorage_volumes.on_longhorn.volumes : v.key => v }

  namespace     = each.value.namespace
  claim         = each.value.name
  storage_class = clusterstorage_storage_backend.openebs.storage_classes[0]
  delete_source = var.delete_sources

  timeouts = {
    create = "2h"
  }
}
