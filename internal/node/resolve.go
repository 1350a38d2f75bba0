package node

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// AddressFromNode returns the address to reach a Kubernetes node at: its first InternalIP, else its
// first Hostname. ExternalIP is deliberately not used: it is often NAT'd or firewalled for SSH,
// and silently connecting to another address than the cluster uses would surprise; set an
// override address instead.
func AddressFromNode(n *corev1.Node) (string, error) {
	if n == nil {
		return "", errors.New("no node given")
	}
	for _, want := range []corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeHostName} {
		for _, a := range n.Status.Addresses {
			if a.Type == want && strings.TrimSpace(a.Address) != "" {
				return strings.TrimSpace(a.Address), nil
			}
		}
	}
	have := make([]string, 0, len(n.Status.Addresses))
	for _, a := range n.Status.Addresses {
		have = append(have, fmt.Sprintf("%s=%q", a.Type, a.Address))
	}
	listed := "it lists no addresses"
	if len(have) > 0 {
		listed = "it lists only " + strings.Join(have, ", ")
	}
	return "", fmt.Errorf("node %q has no InternalIP or Hostname address to connect to (%s): set an address for it in the node overrides", n.Name, listed)
}

// Resolve builds the Target for the node named name: defaults, then that node's entry in
// overrides, then (unless the override gives a host) the address from node, which may be nil when
// the override gives the host. defaults must not set a host: each node has its own. The result
// has defaults applied (WithDefaults) and is validated.
func Resolve(name string, node *corev1.Node, defaults Target, overrides map[string]Override) (Target, error) {
	if defaults.Host != "" {
		return Target{}, fmt.Errorf("node %q: the default SSH settings set host %q, but each node has its own address: set it per node in the overrides", name, defaults.Host)
	}
	t := defaults
	if t.Bastion != nil {
		b := *t.Bastion
		t.Bastion = &b
	}
	if o, ok := overrides[name]; ok {
		t = o.apply(t)
	}
	if t.Host == "" {
		if node == nil {
			return Target{}, fmt.Errorf("node %q: no address: the node was not found and its override sets no host", name)
		}
		addr, err := AddressFromNode(node)
		if err != nil {
			return Target{}, err
		}
		t.Host = addr
	}
	t.Node = name
	t = t.WithDefaults()
	if err := t.Validate(); err != nil {
		return Target{}, fmt.Errorf("node %q: %w", name, err)
	}
	return t, nil
}

// apply returns t changed by the fields set in o.
func (o Override) apply(t Target) Target {
	if o.Host != "" {
		t.Host = o.Host
	}
	if o.Port != 0 {
		t.Port = o.Port
	}
	if o.User != "" {
		t.User = o.User
	}
	if o.Auth != nil {
		t.Auth = *o.Auth
	}
	if o.HostKey != nil {
		t.HostKey = *o.HostKey
	}
	if o.Bastion != nil {
		b := *o.Bastion
		t.Bastion = &b
	}
	if o.Sudo != nil {
		t.Sudo = *o.Sudo
	}
	return t
}
