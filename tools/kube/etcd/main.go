// Command etcd is etcd v3.6 built from go.etcd.io/etcd/server/v3 for the
// local cluster of tools/kube/cluster.sh. It lives in its own module so that
// its dependency versions never move those of the Kubernetes build.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
