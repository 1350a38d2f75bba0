variable "kubeconfig" {
  description = "Path of the kubeconfig of the cluster to use."
  type        = string
  default     = "~/.kube/config"
}

variable "longhorn_class" {
  description = "The Longhorn StorageClass whose claims move."
  type        = string
  default     = "longhorn"
}

variable "hostpath_base_path" {
  description = "Directory on every node below which OpenEBS hostpath keeps its volumes: on the fast disk."
  type        = string
  default     = "/var/openebs/local"
}

variable "delete_sources" {
  description = "Set to true once the workloads run well on the new volumes: the Longhorn volumes the migrations kept are deleted."
  type        = bool
  default     = false
}

variable "remove_longhorn" {
  description = "Set to true, in an apply after the one that deleted the sources, to uninstall Longhorn. Its destroy guard refuses while Longhorn still serves any volume, kept sources included."
  type        = bool
  default     = false
}
