# A release installed with helm, by <namespace>/<release_name>. The type comes from the chart's
# name and the typed settings are read back from the release's values; values the typed settings
# do not cover are not imported, so put them in `values` (the next plan shows any difference).
terraform import clusterstorage_storage_backend.longhorn longhorn-system/longhorn
