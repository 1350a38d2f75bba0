variable "kubeconfig" {
  description = "Path of the kubeconfig of the cluster to use."
  type        = string
}

variable "nodes" {
  description = "The nodes to compare on, by Kubernetes node name: the address and port of each node's sshd, and the directory on that node below which its local volume and its node-path benchmark live. The first node by name also holds OpenEBS's hostpath volumes and the comparison's baseline."
  type = map(object({
    host     = string
    port     = optional(number, 22)
    data_dir = string
  }))
  validation {
    condition     = length(var.nodes) > 0
    error_message = "Name at least one node."
  }
}

variable "ssh_user" {
  description = "SSH login user on the nodes."
  type        = string
  default     = "root"
}

variable "ssh_key_path" {
  description = "Private key to log in to the nodes with."
  type        = string
}

variable "known_hosts_path" {
  description = "known_hosts file holding the nodes' host keys."
  type        = string
}

variable "fio_image" {
  description = "Container image with fio and sh, for the benchmark pods."
  type        = string
  default     = "nixery.dev/shell/fio"
}

variable "runtime" {
  description = "How long each fio run measures (the seed article used 60s)."
  type        = string
  default     = "10s"
}

variable "rounds" {
  description = "Interleaved rounds of the comparison: each target runs the job this often."
  type        = number
  default     = 3
}

variable "min_read_iops" {
  description = "The check block's threshold for every local volume's read IOPS (database profile)."
  type        = number
  default     = 5000
}

variable "openebs_chart" {
  description = "Local path of the OpenEBS chart (directory or .tgz) to install."
  type        = string
}
