terraform {
  required_providers {
    clusterstorage = {
      source = "clusterstorage/clusterstorage"
    }
  }
}

# The same settings as the hashicorp/kubernetes and hashicorp/helm providers.
provider "clusterstorage" {
  kubernetes {
    config_path    = "~/.kube/config"
    config_context = "k3s-prod"
  }
}
