terraform {
  required_providers {
    clusterstorage = {
      source = "clusterstorage/clusterstorage"
    }
  }
}

# The kubernetes block takes the same settings and KUBE_* environment variables as the
# hashicorp/kubernetes and hashicorp/helm providers.
provider "clusterstorage" {
  kubernetes {
    config_path    = "~/.kube/config"
    config_context = "k3s-prod"
  }

  # Nodes are reached over SSH for local_pv directories, node-path benchmarks and k3s data
  # directory moves. A node's address is its InternalIP unless `nodes` says otherwise.
  ssh {
    user             = "ubuntu"
    sudo             = true
    private_key_path = "~/.ssh/id_ed25519"
    known_hosts_path = "~/.ssh/known_hosts"
  }

  nodes = {
    "k8s3" = {
      host     = "192.0.2.13"
      host_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyForTheDocsOnly0000000000000000000000"
    }
  }
}
