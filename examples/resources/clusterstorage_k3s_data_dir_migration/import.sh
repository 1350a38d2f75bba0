# <node>,<source>,<target>[,<switch_method>]: the import checks that k3s on the node uses the target.
# bytes_copied, files_copied, downtime_seconds and migrated_at stay empty for an imported migration.
terraform import clusterstorage_k3s_data_dir_migration.nvme worker-1,/var/lib/rancher/k3s,/mnt/nvme/k3s
