variable "kubeconfig" {
  description = "kubeconfig of the k3s cluster."
  type        = string
  default     = "~/.kube/k3s.yaml"
}

variable "kube_context" {
  description = "Context in the kubeconfig."
  type        = string
  default     = "default"
}

variable "ssh_private_key" {
  description = "Private key of the ubuntu user on the nodes (a sensitive workspace variable in Terraform Cloud)."
  type        = string
  sensitive   = true
}

variable "nodes" {
  description = "The k3s nodes by Kubernetes node name: SSH address, pinned host key, and the NVMe mount the data moves to."
  type = map(object({
    address  = string
    host_key = string
    nvme     = string
  }))
  default = {
    "k3s-1" = { address = "10.0.10.11", host_key = "ssh-ed25519 AAAA...replace-me", nvme = "/mnt/nvme0" }
    "k3s-2" = { address = "10.0.10.12", host_key = "ssh-ed25519 AAAA...replace-me", nvme = "/mnt/nvme0" }
    "k3s-3" = { address = "10.0.10.13", host_key = "ssh-ed25519 AAAA...replace-me", nvme = "/mnt/nvme0" }
  }
}

variable "min_read_iops" {
  description = "The apply fails when the default class reads fewer IOPS than this (database profile)."
  type        = number
  default     = 5000
}

variable "max_write_p99_ms" {
  description = "The apply fails when the default class's p99 write latency is above this (database profile)."
  type        = number
  default     = 5
}
