# By resource identity (Terraform 1.12+, OpenTofu 1.12+): the volume's name.
import {
  to = clusterstorage_local_pv.postgres
  identity = {
    name = "k8s3-localdisk1"
  }
}
