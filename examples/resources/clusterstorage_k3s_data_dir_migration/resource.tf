# Move k3s's data from the root disk to an NVMe partition mounted at /mnt/nvme. k3s is stopped
# only for the final delta copy, the verification and the switch; /var/lib/rancher/k3s becomes a
# symbolic link to the new place, so every absolute path k3s wrote keeps working. The original is
# kept as /var/lib/rancher/k3s.pre-migration-<time> until you remove it.
resource "clusterstorage_k3s_data_dir_migration" "nvme" {
  node   = "worker-1"
  target = "/mnt/nvme/k3s"

  # Evict the node's pods through the API first, and uncordon it when k3s is healthy again.
  drain = true

  # Keep at least 10 GiB free on the NVMe partition after the copy.
  free_space_margin = "10Gi"

  # Measure sequential writes on both disks with fio first (source_write_bytes_per_second,
  # target_write_bytes_per_second): the numbers behind the move.
  measure_write_speed = true

  # `terraform destroy` moves the data back with the same procedure (default: only forget).
  restore_on_destroy = true

  # A disk mounted at /var/lib/rancher/k3s/storage (local-path volumes) moves along as a mount
  # instead of being refused.
  carry_mounts = true

  timeouts = {
    create = "2h"
  }
}

# The same with data-dir set in the k3s configuration instead of a link.
resource "clusterstorage_k3s_data_dir_migration" "agent" {
  node          = "worker-2"
  service       = "k3s-agent"
  target        = "/srv/k3s"
  switch_method = "config"
  keep_backup   = false
}
