# By resource identity (Terraform 1.12+, OpenTofu 1.12+): the release's namespace and name.
import {
  to = clusterstorage_storage_backend.openebs
  identity = {
    namespace    = "openebs"
    release_name = "openebs"
  }
}
