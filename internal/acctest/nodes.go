package acctest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/node"
)

// NodesEnv names the environment variable pointing at the nodes file of the test cluster: the
// JSON that tools/kube/cluster.sh writes next to its kubeconfig (nodes.json), describing each
// node's name, address, zone, sshd and disks. Without it the tests look for nodes.json next to
// the kubeconfig (following a symlink to it).
const NodesEnv = "CLUSTERSTORAGE_ACC_NODES"

// ClusterNode is one node of the test cluster, as the nodes file describes it.
type ClusterNode struct {
	// Name is the Kubernetes node name.
	Name string `json:"name"`
	// Address is the node's own loopback address, its InternalIP.
	Address string `json:"address"`
	// Zone is its topology.kubernetes.io/zone label.
	Zone string `json:"zone"`
	// SSHHost and SSHPort are where the node's own sshd listens; root logs in with the cluster's
	// client key.
	SSHHost string `json:"ssh_host"`
	SSHPort int    `json:"ssh_port"`
	// MachineDir is the node.sh directory of a node that is a machine of its own; empty for the
	// node that runs on this machine.
	MachineDir string `json:"machine_dir"`
	// DataDisks are mount points of extra disks on the node (real ext4 file systems).
	DataDisks []string `json:"data_disks"`
	// K3s is true for a k3s-shaped machine: k3s.service as k3s's install script writes it, its
	// containerd from /var/lib/rancher/k3s/data/<hash>/bin (tools/kube/k3s-standin.sh).
	K3s bool `json:"k3s"`

	cluster *clusterNodes
}

// clusterNodes is the nodes file.
type clusterNodes struct {
	SSHUser       string `json:"ssh_user"`
	SSHPrivateKey string `json:"ssh_private_key"`
	SSHKnownHosts string `json:"ssh_known_hosts"`
	NodeTool      string `json:"node_tool"`
	// MachineBin is where this checkout's bin/ is bind-mounted (read-only) in every machine node.
	MachineBin string        `json:"machine_bin"`
	Nodes      []ClusterNode `json:"nodes"`

	pool *node.Pool
	// alone: the test holds the nodes alone (RequireNodesAlone), so it may power one off.
	alone bool
}

// NodesFile returns the path of the nodes file the tests use (it may not exist).
func NodesFile() string {
	if path := os.Getenv(NodesEnv); path != "" {
		return path
	}
	kubeconfig := Kubeconfig()
	if resolved, err := filepath.EvalSymlinks(kubeconfig); err == nil {
		kubeconfig = resolved
	}
	return filepath.Join(filepath.Dir(kubeconfig), "nodes.json")
}

// Nodes returns the test cluster's nodes from the nodes file, in order (node 1 first), or nil
// when there is no nodes file (a cluster of the user's choosing). It skips the test outside an
// acceptance run.
func Nodes(t testing.TB) []ClusterNode {
	t.Helper()
	Kube(t) // skips without TF_ACC, fails without a cluster
	b, err := os.ReadFile(NodesFile())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatalf("reading the nodes file: %v", err)
	}
	var c clusterNodes
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatalf("parsing the nodes file %s: %v", NodesFile(), err)
	}
	c.pool = newNodePool(t)
	for i := range c.Nodes {
		c.Nodes[i].cluster = &c
	}
	return c.Nodes
}

// RequireNodes returns the cluster's nodes when it has at least n, each with its own sshd, after
// checking that each is Ready. With fewer it skips the test, or fails it when the CI environment
// variable is set: CI runs the multi-node cluster (CLUSTER_NODES=3), so a missing node there is a
// broken test bed, not a reason to skip. The test holds the nodes shared (nodelock.go): no test
// powers one off while it runs.
func RequireNodes(t testing.TB, n int) []ClusterNode {
	t.Helper()
	return requireNodes(t, Nodes(t), n, false)
}

// RequireNodesAlone is RequireNodes for a test that powers a node off or stops its kubelet: it
// holds the nodes alone, waiting for the tests that hold them to end.
func RequireNodesAlone(t testing.TB, n int) []ClusterNode {
	t.Helper()
	return requireNodes(t, Nodes(t), n, true)
}

// requireNodes does RequireNodes's checks on nodes, the nodes file's contents.
func requireNodes(t testing.TB, nodes []ClusterNode, n int, alone bool) []ClusterNode {
	t.Helper()
	if len(nodes) < n {
		msg := fmt.Sprintf("needs a cluster of at least %d nodes with their own sshd (%s lists %d): start one with `CLUSTER_NODES=3 make dev-cluster`",
			n, NodesFile(), len(nodes))
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	client := Kube(t)
	if alone {
		holdNodesAlone(t, client)
		nodes[0].cluster.alone = true
	} else {
		holdNodesShared(t, client)
	}
	for _, nd := range nodes {
		// A node that the test which held the nodes before this one powered off may still be
		// coming back.
		err := kube.Poll(context.Background(), 200*time.Millisecond, time.Minute, "node "+nd.Name+" to be Ready", func(ctx context.Context) (bool, string, error) {
			got, err := client.CoreV1().Nodes().Get(ctx, nd.Name, metav1.GetOptions{})
			if err != nil {
				return kube.KeepPolling(err)
			}
			return nodeReady(got), "not Ready", nil
		})
		if err != nil {
			t.Fatalf("node %s of the nodes file: %v", nd.Name, err)
		}
	}
	return nodes
}

// RequireK3sNode returns the cluster's k3s-shaped node (tools/kube/cluster.sh makes node 3 one by
// default), after RequireNodes's checks, holding the nodes alone: the test stops k3s and with it
// the node's kubelet. Without one it skips the test, or fails it when the CI environment variable
// is set.
func RequireK3sNode(t testing.TB) ClusterNode {
	t.Helper()
	nodes := Nodes(t)
	if i := slices.IndexFunc(nodes, func(n ClusterNode) bool { return n.K3s }); i >= 0 {
		return requireNodes(t, nodes, 1, true)[i]
	}
	msg := fmt.Sprintf("the test cluster has no k3s-shaped node (%s): start one with `CLUSTER_NODES=3 CLUSTER_K3S_NODES=3 make dev-cluster`", NodesFile())
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ClusterNode{}
}

// newNodePool is an SSH connection pool closed when the test ends.
func newNodePool(t testing.TB) *node.Pool {
	p := node.NewPool(node.PoolOptions{})
	t.Cleanup(func() { _ = p.Close() }) //nolint:errcheck // closing idle test connections
	return p
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// ProviderConfigNodes is ProviderConfig plus ssh settings that reach each of nodes through its own
// sshd, with host keys checked against the cluster's known_hosts.
func ProviderConfigNodes(nodes ...ClusterNode) string {
	if len(nodes) == 0 {
		return ProviderConfig()
	}
	c := nodes[0].cluster
	var entries strings.Builder
	for _, n := range nodes {
		fmt.Fprintf(&entries, "    %q = { host = %q, port = %d }\n", n.Name, n.SSHHost, n.SSHPort)
	}
	return providerConfigSSH(c.SSHUser, c.SSHPrivateKey, c.SSHKnownHosts, entries.String())
}

// providerConfigSSH is the provider block with ssh settings and the nodes entries (one line
// each, indented by four spaces).
func providerConfigSSH(user, privateKey, knownHosts, entries string) string {
	return fmt.Sprintf(`provider "clusterstorage" {
  kubernetes {
    config_path = %q
  }
  ssh {
    user             = %q
    private_key_path = %q
    known_hosts_path = %q
  }
  nodes = {
%s  }
}
`, Kubeconfig(), user, privateKey, knownHosts, entries)
}

// Run runs a fixed sh script with args ($1, $2...) on the node over its sshd, within a minute,
// and returns its standard output.
func (n ClusterNode) Run(t testing.TB, script string, args ...string) (string, error) {
	t.Helper()
	return n.RunWithin(t, time.Minute, script, args...)
}

// RunWithin is Run with a deadline of its own, for a script that takes longer (a package install).
func (n ClusterNode) RunWithin(t testing.TB, timeout time.Duration, script string, args ...string) (string, error) {
	t.Helper()
	host, err := n.host(timeout)
	if err != nil {
		return "", err
	}
	res, err := host.Run(context.Background(), node.Script(script, args...))
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && n.MachineDir == "" {
			return "", fmt.Errorf("on node %s: %w\n%s", n.Name, err, sshdState())
		}
		return "", fmt.Errorf("on node %s: %w", n.Name, err)
	}
	return string(res.Stdout), nil
}

// sshdState describes this machine's sshd processes and the end of node 1's sshd log, for a
// command on node 1 that timed out (a CI run once saw every command on it time out).
func sshdState() string {
	ps, err := exec.Command("ps", "-C", "sshd", "-o", "pid,ppid,stat,wchan:24,etime,args").CombinedOutput()
	if err != nil {
		ps = append(ps, []byte(err.Error())...)
	}
	log, _ := exec.Command("tail", "-n", "30", filepath.Join(filepath.Dir(Kubeconfig()), "logs", "sshd.log")).CombinedOutput() //nolint:errcheck // shown as is
	return fmt.Sprintf("sshd processes on this machine:\n%s\nend of node 1's sshd log:\n%s", ps, log)
}

// Exec runs a command inside the machine node through the node tool (all its namespaces, not over
// SSH: it works while the node's sshd is stopped) and returns its combined output.
func (n ClusterNode) Exec(t testing.TB, args ...string) (string, error) {
	t.Helper()
	if n.MachineDir == "" {
		t.Fatalf("node %s runs on this machine, not in a machine of its own", n.Name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, n.cluster.NodeTool, append([]string{"exec", n.MachineDir}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("inside node %s: %s: %w\n%s", n.Name, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// Host is the node over its sshd, as the provider reaches it (commands get a minute each unless
// their context says otherwise).
func (n ClusterNode) Host(t testing.TB) *node.Host {
	t.Helper()
	host, err := n.host(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return host
}

func (n ClusterNode) host(commandTimeout time.Duration) (*node.Host, error) {
	return n.cluster.pool.Host(node.Target{
		Endpoint: node.Endpoint{
			Host:    n.SSHHost,
			Port:    n.SSHPort,
			User:    n.cluster.SSHUser,
			Auth:    node.Auth{PrivateKeyFile: n.cluster.SSHPrivateKey},
			HostKey: node.HostKeyPolicy{KnownHostsFile: n.cluster.SSHKnownHosts},
		},
		ConnectTimeout: 10 * time.Second,
		CommandTimeout: commandTimeout,
	})
}

// MustRun is Run that fails the test on error.
func (n ClusterNode) MustRun(t testing.TB, script string, args ...string) string {
	t.Helper()
	out, err := n.Run(t, script, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// ReadFile reads a file on the node, over its sshd (a ReadFunc).
func (n ClusterNode) ReadFile(t testing.TB, path string) ([]byte, error) {
	t.Helper()
	out, err := n.Run(t, `cat "$1"`, path)
	return []byte(out), err
}

// Exists reports whether path exists on the node.
func (n ClusterNode) Exists(t testing.TB, path string) bool {
	t.Helper()
	out := n.MustRun(t, `if [ -e "$1" ]; then echo yes; else echo no; fi`, path)
	return strings.TrimSpace(out) == "yes"
}

// PowerOff powers the machine node off (its kubelet, containerd, sshd and pods stop at once, as
// on a real node losing power after a clean shutdown; its disks are kept). Only for machine
// nodes, in a test that holds the nodes alone (RequireNodesAlone).
func (n ClusterNode) PowerOff(t testing.TB) {
	t.Helper()
	if n.cluster == nil || !n.cluster.alone {
		t.Fatalf("powering node %s off needs the nodes held alone (acctest.RequireNodesAlone): a concurrent test may be using it", n.Name)
	}
	n.nodeTool(t, "down")
}

// PowerOn boots the machine node again and waits until its kubelet has renewed the node's Lease
// (kube-node-lease) since and the Node is Ready: a Node that was off for less than the node
// monitor's grace period never stopped being Ready.
func (n ClusterNode) PowerOn(t testing.TB) {
	t.Helper()
	since := time.Now()
	n.nodeTool(t, "up")
	client := Kube(t)
	err := kube.Poll(context.Background(), 200*time.Millisecond, 2*time.Minute, "node "+n.Name+" to be Ready", func(ctx context.Context) (bool, string, error) {
		lease, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return kube.KeepPolling(err)
		}
		if lease.Spec.RenewTime == nil || lease.Spec.RenewTime.Before(&metav1.MicroTime{Time: since}) {
			return false, "its kubelet has not renewed its Lease since it was powered on", nil
		}
		got, err := client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return kube.KeepPolling(err)
		}
		return nodeReady(got), "not Ready", nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (n ClusterNode) nodeTool(t testing.TB, verb string) {
	t.Helper()
	if n.MachineDir == "" {
		t.Fatalf("node %s runs on this machine and cannot be powered off by a test", n.Name)
	}
	out, err := exec.Command(n.cluster.NodeTool, verb, n.MachineDir).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s %s: %v\n%s", n.cluster.NodeTool, verb, n.MachineDir, err, out)
	}
}

// LocalNodeName returns the name of the node that runs on this machine, read from the nodes file
// next to kubeconfig (for tests outside an acceptance run, such as the Helm integration tests,
// that look at a volume's directory on this machine); "" when there is no nodes file (a cluster
// of the user's choosing) or every node is a machine of its own.
func LocalNodeName(t testing.TB, kubeconfig string) string {
	t.Helper()
	if resolved, err := filepath.EvalSymlinks(kubeconfig); err == nil {
		kubeconfig = resolved
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(kubeconfig), "nodes.json"))
	if errors.Is(err, os.ErrNotExist) {
		return ""
	}
	if err != nil {
		t.Fatalf("reading the nodes file: %v", err)
	}
	var c clusterNodes
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatalf("parsing the nodes file next to %s: %v", kubeconfig, err)
	}
	for _, n := range c.Nodes {
		if n.MachineDir == "" {
			return n.Name
		}
	}
	return ""
}

// MachineBin is where the node, a machine of its own, sees this checkout's bin/ (read-only).
func (n ClusterNode) MachineBin(t testing.TB) string {
	t.Helper()
	if n.MachineDir == "" || n.cluster.MachineBin == "" {
		t.Fatalf("node %s has no bin/ of this checkout bound in (%s)", n.Name, NodesFile())
	}
	return n.cluster.MachineBin
}
