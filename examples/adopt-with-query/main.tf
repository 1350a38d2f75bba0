# Adopting a cluster's storage with `terraform query` (Terraform 1.14+): this file configures the
# provider; adopt.tfquery.hcl lists what to adopt. See README.md for the steps.

terraform {
  required_version = ">= 1.14.0"
  required_providers {
    clusterstorage = {
      source = "clusterstorage/clusterstorage"
    }
  }
}

variable "kubeconfig" {
  description = "Path of the kubeconfig of the cluster to adopt."
  type        = string
}

variable "nodes" {
  description = "The nodes holding local volumes, by Kubernetes node name: the address and port of each node's sshd (an import of a local volume looks at its directory)."
  type = map(object({
    host = string
    port = optional(number, 22)
  }))
  default = {}
}

variable "ssh_user" {
  description = "SSH login user on the nodes."
  type        = string
  default     = "root"
}

variable "ssh_key_path" {
  description = "Private key to log in to the nodes with."
  type        = string
  default     = "~/.ssh/id_ed25519"
}

provider "clusterstorage" {
  kubernetes {
    config_path = var.kubeconfig
  }
  ssh {
    user             = var.ssh_user
    private_key_path = var.ssh_key_path
  }
  nodes = var.nodes
}
