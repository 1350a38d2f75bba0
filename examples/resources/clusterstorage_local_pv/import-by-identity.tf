# By resource identity (Terraform 1.12+, OpenTofu 1.12+): the volume's name.
import {
  to = clusterstorage_local_pv.ssd["k8s1-ssd1"]
  identity = {
    name = "k8s1-ssd1"
  }
}
