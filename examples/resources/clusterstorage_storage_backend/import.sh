# A release installed with helm, by <namespace>/<release_name>:
terraform import clusterstorage_storage_backend.longhorn longhorn-system/longhorn
