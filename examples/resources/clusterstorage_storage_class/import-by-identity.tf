# By resource identity (Terraform 1.12+, OpenTofu 1.12+): the class's name.
import {
  to = clusterstorage_storage_class.hostpath
  identity = {
    name = "openebs-hostpath-fast"
  }
}
