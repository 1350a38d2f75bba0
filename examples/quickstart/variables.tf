variable "kubeconfig" {
  description = "Path of the kubeconfig of the cluster to use."
  type        = string
}

variable "node" {
  description = "Kubernetes node that holds the local volumes and the node-path benchmark."
  type        = string
}

variable "ssh_user" {
  description = "SSH login user on the node."
  type        = string
  default     = "root"
}

variable "ssh_port" {
  description = "SSH port of the node."
  type        = number
  default     = 22
}

variable "ssh_host" {
  description = "Address to reach the node at over SSH."
  type        = string
  default     = "127.0.0.1"
}

variable "ssh_key_path" {
  description = "Private key to log in with."
  type        = string
}

variable "known_hosts_path" {
  description = "known_hosts file holding the node's host key."
  type        = string
}

variable "data_dir" {
  description = "Directory on the node below which the volumes and the node-path benchmark live."
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
  description = "The check block's threshold for the local volume's read IOPS (database profile)."
  type        = number
  default     = 5000
}

variable "openebs_chart" {
  description = "Local path of the OpenEBS chart (directory or .tgz) to install."
  type        = string
}
