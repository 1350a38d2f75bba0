# What to adopt: `terraform query -generate-config-out=generated.tf` writes a resource block and an
# import block for each object these list blocks find, with the settings an import reads.

# Every Longhorn and OpenEBS release, whoever installed it. One that a k3s HelmChart, Flux or
# Argo CD manages is a warning naming its owner, not a block.
list "clusterstorage_storage_backend" "releases" {
  provider         = clusterstorage
  include_resource = true
}

# The classes of local volumes. A class a release installed (openebs-hostpath, longhorn) is the
# release's: filter by provisioner so that it is not listed.
list "clusterstorage_storage_class" "local" {
  provider         = clusterstorage
  include_resource = true

  config {
    storage_provisioner = "kubernetes.io/no-provisioner"
  }
}

# The hand-made local volumes of that class.
list "clusterstorage_local_pv" "local" {
  provider         = clusterstorage
  include_resource = true

  config {
    storage_class_name = "local-nvme"
  }
}
