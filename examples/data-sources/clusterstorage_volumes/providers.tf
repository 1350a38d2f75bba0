# Lets this directory be planned on its own with a local build (see DEVELOPMENT.md, "Using a local
# build"): the provider reads the cluster from KUBE_CONFIG_PATH (or the other KUBE_* variables).
# Documentation shows only the other file(s) of this directory.
terraform {
  required_providers {
    clusterstorage = {
      source = "clusterstorage/clusterstorage"
    }
  }
}

provider "clusterstorage" {}
