# By resource identity (Terraform 1.12+, OpenTofu 1.12+): source (default /var/lib/rancher/k3s)
# and switch_method (default symlink) may be left out.
import {
  to = clusterstorage_k3s_data_dir_migration.agent
  identity = {
    node          = "worker-2"
    target        = "/srv/k3s"
    switch_method = "config"
  }
}
