resource "terraform_data" "needs_ssd" {
  lifecycle {
    precondition {
      condition     = data.clusterstorage_storage_capacity.target.filesystems[%q].rotational == false
      error_message = "The target is on a rotational disk."
    }
  }
}
