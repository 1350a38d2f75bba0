locals {
  k3s_needs_bytes = 1073741824 # 1 GiB: far more than the 32 MiB target has
}

resource "clusterstorage_k3s_data_dir_migration" "move" {
  node   = %[1]q
  target = "%[2]s/k3s"

  lifecycle {
    precondition {
      condition     = data.clusterstorage_storage_capacity.target.filesystems[%[1]q].available_bytes >= local.k3s_needs_bytes
      error_message = "Not enough space on the target: ${data.clusterstorage_storage_capacity.target.summary}"
    }
  }
}
