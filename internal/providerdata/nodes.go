package providerdata

import (
	"context"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/node"
)

// NodeAccess turns a Kubernetes node name into a handle that runs commands on that node over SSH:
// the provider's ssh defaults, the node's entry in `nodes`, and the address from the Node object.
// Every resource of one provider instance shares its connection pool.
type NodeAccess struct {
	Pool      *node.Pool
	Defaults  node.Target
	Overrides map[string]node.Override
	// Configured is false when the provider has no ssh block and no nodes entries.
	Configured bool
	// Unknown names the provider attributes (ssh, nodes) not known yet: at plan, when they are
	// built from values computed during apply. No node is reached before they are known.
	Unknown []string
}

// Host returns the SSH handle for the cluster node named name. A node the cluster does not have is
// an error that lists the nodes it has.
func (d *Data) Host(ctx context.Context, name string) (*node.Host, error) {
	if d == nil || d.Kube == nil {
		return nil, errNotConfigured
	}
	if err := d.checkSSH(name); err != nil {
		return nil, err
	}
	n, err := d.Node(ctx, name)
	if err != nil {
		return nil, err
	}
	return d.HostFor(n)
}

type nodeEntry struct {
	mu   sync.Mutex
	node *corev1.Node
}

// Node returns the cluster's Node named name, read once per provider configuration (one
// Terraform run): its name, labels and addresses, which is what resources use it for, do not
// change under a run. A failed lookup is not remembered. The caller must not modify the Node.
func (d *Data) Node(ctx context.Context, name string) (*corev1.Node, error) {
	if d == nil || d.Kube == nil {
		return nil, errNotConfigured
	}
	d.nodesMu.Lock()
	if d.nodes == nil {
		d.nodes = map[string]*nodeEntry{}
	}
	e, ok := d.nodes[name]
	if !ok {
		e = &nodeEntry{}
		d.nodes[name] = e
	}
	d.nodesMu.Unlock()

	// Concurrent lookups of one node wait for the first instead of each asking the API server.
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.node != nil {
		return e.node, nil
	}
	client, err := d.Kube.Typed()
	if err != nil {
		return nil, err
	}
	n, err := kube.GetNode(ctx, client, name)
	if err != nil {
		return nil, err
	}
	e.node = n
	return n, nil
}

// HostFor is Host for a Node the caller has already read, saving the second API request.
func (d *Data) HostFor(n *corev1.Node) (*node.Host, error) {
	if d == nil || d.Kube == nil {
		return nil, errNotConfigured
	}
	if err := d.checkSSH(n.Name); err != nil {
		return nil, err
	}
	target, err := node.Resolve(n.Name, n, d.Nodes.Defaults, d.Nodes.Overrides)
	if err != nil {
		return nil, err
	}
	return d.Nodes.Pool.Host(target)
}

// SSHReady reports whether nodes can be reached now: the provider has an ssh block or nodes
// entries, and both are known (not computed during this apply).
func (d *Data) SSHReady() bool {
	return d != nil && d.Kube != nil && d.Nodes != nil && d.Nodes.Configured && len(d.Nodes.Unknown) == 0
}

func (d *Data) checkSSH(name string) error {
	if d.Nodes != nil && len(d.Nodes.Unknown) > 0 {
		return fmt.Errorf("node %q cannot be reached yet: the provider's %s depend on values computed during apply "+
			"and are known only then", name, strings.Join(d.Nodes.Unknown, " and "))
	}
	if d.Nodes == nil || !d.Nodes.Configured {
		return fmt.Errorf("node %q must be reached over SSH, but the provider has no ssh block: "+
			"add `ssh { private_key_path = \"~/.ssh/id_ed25519\" }` (or agent/password) to the provider, "+
			"and a `nodes` entry where the node's address is not its InternalIP", name)
	}
	return nil
}
