terraform {
  required_version = ">= 1.5"
  required_providers {
    clusterstorage = {
      source  = "clusterstorage/clusterstorage"
      version = "~> 0.1"
    }
  }
}
