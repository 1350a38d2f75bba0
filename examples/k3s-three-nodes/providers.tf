provider "clusterstorage" {
  kubernetes {
    config_path    = var.kubeconfig
    config_context = var.kube_context
  }

  # The k3s nodes are reached as ubuntu with passwordless sudo; host keys are pinned per node
  # because CI runners have no known_hosts.
  ssh {
    user            = "ubuntu"
    sudo            = true
    private_key     = var.ssh_private_key
    connect_timeout = "20s"
    command_timeout = "30m"
  }

  nodes = { for name, n in var.nodes : name => { host = n.address, host_key = n.host_key } }
}
