provider "clusterstorage" {
  kubernetes {
    config_path = %q
  }
  ssh {
    user             = %q
    private_key_path = %q
  }
  nodes = {
    %q = { host = %q, port = %d, %s }
  }
}
