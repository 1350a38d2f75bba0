# acctest.AdoptQuery: hand-made storage to adopt, with the settings an import records. Its
# arguments, in order: the classes' provisioner, the fast class, the fast volumes' node, the slow
# class.
list "clusterstorage_storage_class" "classes" {
  provider         = clusterstorage
  include_resource = true
  config {
    storage_provisioner = %[1]q
  }
}

list "clusterstorage_local_pv" "fast" {
  provider         = clusterstorage
  include_resource = true
  config {
    storage_class_name = %[2]q
    node               = %[3]q
  }
}

list "clusterstorage_local_pv" "slow" {
  provider         = clusterstorage
  include_resource = true
  config {
    storage_class_name = %[4]q
  }
}
