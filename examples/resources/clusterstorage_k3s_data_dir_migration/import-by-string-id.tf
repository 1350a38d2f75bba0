# A move made by hand, by <node>,<source>,<target>[,<switch_method>]: the import checks that k3s
# on the node uses the target.
import {
  to = clusterstorage_k3s_data_dir_migration.nvme
  id = "worker-1,/var/lib/rancher/k3s,/mnt/nvme/k3s"
}
