check "ext4_has_1g_free" {
  assert {
    condition     = data.clusterstorage_storage_capacity.test.filesystems[%[1]q].available_bytes >= 1073741824
    error_message = "less than 1 GiB free: ${data.clusterstorage_storage_capacity.test.summary}"
  }
}
check "tmpfs_has_8m_free" {
  assert {
    condition     = data.clusterstorage_storage_capacity.tmpfs.totals.min_available_bytes >= 8388608
    error_message = "less than 8 MiB free"
  }
}
