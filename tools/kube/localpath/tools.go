//go:build tools

// Package localpath pins rancher/local-path-provisioner, a dynamic hostPath
// provisioner, so that tools/kube/cluster.sh can build it with
// `go build github.com/rancher/local-path-provisioner` from this module
// and pack it as localhost/clusterstorage/local-path-provisioner:v0.0.30.
package localpath

import _ "github.com/rancher/local-path-provisioner"
