package acctest

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// NodeEnv names the environment variable that picks the cluster node the node tests use. Tests
// that reach a node over SSH map it to an sshd on this machine, so that node must be this machine
// (as it is for the local cluster, or a single-node k3s running here).
const NodeEnv = "CLUSTERSTORAGE_ACC_NODE"

// Node returns the name of the node tests pin volumes and pods to: NodeEnv; or, on the local
// cluster, the node that runs on this machine (the nodes file says which); or the cluster's first
// node.
func Node(t testing.TB) string {
	t.Helper()
	if name := os.Getenv(NodeEnv); name != "" {
		return name
	}
	if nodes := Nodes(t); nodes != nil {
		for _, n := range nodes {
			if n.MachineDir == "" {
				return n.Name
			}
		}
		msg := "no node of the test cluster runs on this machine (it was started with CLUSTER_HOST_NODE=0), and this test reaches its node as this machine"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	nodes, err := Kube(t).CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing nodes: %v", err)
	}
	if len(nodes.Items) == 0 {
		t.Fatal("the test cluster has no nodes")
	}
	return nodes.Items[0].Name
}

// ProviderConfigSSH is ProviderConfig plus ssh settings that reach node through sshd, with the
// host key pinned as a careful user would.
func ProviderConfigSSH(s *SSHD, node string) string {
	return providerConfigSSH(s.User, s.ClientKeyPath, s.KnownHostsPath, fmt.Sprintf("    %q = { host = %q, port = %d }\n", node, s.Host, s.Port))
}

// PauseImage is the sandbox image only the project's local cluster has (tools/kube builds it).
const PauseImage = "localhost/clusterstorage/pause:3.10"

// LocalCluster reports whether the test cluster is the project's local cluster, recognised by
// its locally built pause image on a node. Pods there use the locally built images (never
// pulled) and get the host network from the cluster's pod policy (tools/kube/README.md); on other
// clusters tests use public images and the pod network.
var LocalCluster = sync.OnceValue(func() bool {
	cfg, err := clientcmd.BuildConfigFromFlags("", Kubeconfig())
	if err != nil {
		return false
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return false
	}
	nodes, err := client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return false
	}
	for _, n := range nodes.Items {
		for _, image := range n.Status.Images {
			if slices.Contains(image.Names, PauseImage) {
				return true
			}
		}
	}
	return false
})
