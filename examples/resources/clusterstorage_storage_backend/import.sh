# A release installed with helm, by <namespace>/<release_name>. The type comes from the chart's
# name and the typed settings are read back from the release's values, a key the release does not
# set as the chart's default (an OpenEBS release installed with the chart's defaults reads back with
# Mayastor, LVM and ZFS on); values the typed settings do not cover are not imported, so put them
# in `values` (the next plan shows any difference).
terraform import clusterstorage_storage_backend.longhorn longhorn-system/longhorn
