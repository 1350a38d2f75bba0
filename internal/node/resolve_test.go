package node

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func nodeWith(name string, addrs ...corev1.NodeAddress) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status:     corev1.NodeStatus{Addresses: addrs},
	}
}

func addr(typ corev1.NodeAddressType, a string) corev1.NodeAddress {
	return corev1.NodeAddress{Type: typ, Address: a}
}

func TestAddressFromNode(t *testing.T) {
	tests := []struct {
		name    string
		node    *corev1.Node
		want    string
		wantErr string
	}{
		{
			name: "internal IP wins over hostname and external IP",
			node: nodeWith("n1", addr(corev1.NodeHostName, "n1.lan"), addr(corev1.NodeExternalIP, "203.0.113.5"), addr(corev1.NodeInternalIP, "10.0.0.5")),
			want: "10.0.0.5",
		},
		{
			name: "first internal IP of a dual-stack node",
			node: nodeWith("n1", addr(corev1.NodeInternalIP, "10.0.0.5"), addr(corev1.NodeInternalIP, "fd00::5")),
			want: "10.0.0.5",
		},
		{
			name: "hostname when there is no internal IP",
			node: nodeWith("n1", addr(corev1.NodeExternalIP, "203.0.113.5"), addr(corev1.NodeHostName, "n1.lan")),
			want: "n1.lan",
		},
		{
			name: "blank addresses are skipped",
			node: nodeWith("n1", addr(corev1.NodeInternalIP, " "), addr(corev1.NodeHostName, "n1.lan")),
			want: "n1.lan",
		},
		{
			name:    "external IP only is an error",
			node:    nodeWith("n1", addr(corev1.NodeExternalIP, "203.0.113.5")),
			wantErr: `node "n1" has no InternalIP or Hostname address to connect to (it lists only ExternalIP="203.0.113.5"): set an address for it in the node overrides`,
		},
		{
			name:    "no addresses",
			node:    nodeWith("n1"),
			wantErr: `node "n1" has no InternalIP or Hostname address to connect to (it lists no addresses)`,
		},
		{
			name:    "nil node",
			wantErr: "no node given",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := AddressFromNode(tt.node)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	yes := true
	keyAuth := Auth{PrivateKeyFile: "~/.ssh/id_ed25519"}
	defaults := Target{
		Endpoint: Endpoint{User: "ubuntu", Auth: keyAuth},
		Sudo:     true,
		Bastion:  &Endpoint{Host: "jump.example", Auth: Auth{Agent: true}},
	}
	overrides := map[string]Override{
		"n2": {Host: "192.0.2.2", Port: 2222, User: "admin", Auth: &Auth{Password: "pw"}, Sudo: new(bool)},
		"n3": {HostKey: &HostKeyPolicy{InsecureIgnoreHostKey: true}, Bastion: &Endpoint{Host: "jump2", Auth: keyAuth}, Sudo: &yes},
	}
	n1 := nodeWith("n1", addr(corev1.NodeInternalIP, "10.0.0.1"))
	n3 := nodeWith("n3", addr(corev1.NodeHostName, "n3.lan"))

	t.Run("defaults and node address", func(t *testing.T) {
		got, err := Resolve("n1", n1, defaults, overrides)
		if err != nil {
			t.Fatal(err)
		}
		want := Target{
			Node:     "n1",
			Endpoint: Endpoint{Host: "10.0.0.1", Port: 22, User: "ubuntu", Auth: keyAuth, HostKey: HostKeyPolicy{KnownHostsFile: DefaultKnownHostsFile}},
			Bastion: &Endpoint{Host: "jump.example", Port: 22, User: "root", Auth: Auth{Agent: true},
				HostKey: HostKeyPolicy{KnownHostsFile: DefaultKnownHostsFile}},
			Sudo:           true,
			ConnectTimeout: DefaultConnectTimeout,
		}
		assertTarget(t, got, want)
	})
	t.Run("override replaces fields and needs no node", func(t *testing.T) {
		got, err := Resolve("n2", nil, defaults, overrides)
		if err != nil {
			t.Fatal(err)
		}
		if got.Host != "192.0.2.2" || got.Port != 2222 || got.User != "admin" || got.Auth != (Auth{Password: "pw"}) || got.Sudo {
			t.Errorf("override not applied: %+v", got)
		}
		if got.Bastion == nil || got.Bastion.Host != "jump.example" {
			t.Errorf("default bastion lost: %+v", got.Bastion)
		}
	})
	t.Run("override host key and bastion, address from hostname", func(t *testing.T) {
		got, err := Resolve("n3", n3, defaults, overrides)
		if err != nil {
			t.Fatal(err)
		}
		if got.Host != "n3.lan" || !got.HostKey.InsecureIgnoreHostKey || got.HostKey.KnownHostsFile != "" || got.Bastion.Host != "jump2" || !got.Sudo {
			t.Errorf("override not applied: %+v (bastion %+v)", got, got.Bastion)
		}
	})
	t.Run("defaults are not changed", func(t *testing.T) {
		if _, err := Resolve("n1", n1, defaults, overrides); err != nil {
			t.Fatal(err)
		}
		if defaults.Bastion.Port != 0 || defaults.Port != 0 {
			t.Errorf("Resolve changed the defaults: %+v, bastion %+v", defaults, defaults.Bastion)
		}
	})

	errTests := []struct {
		name     string
		node     string
		obj      *corev1.Node
		defaults Target
		want     string
	}{
		{"node not found and no override host", "n9", nil, defaults, `node "n9": no address`},
		{"node without usable address", "n1", nodeWith("n1", addr(corev1.NodeExternalIP, "1.2.3.4")), defaults, "no InternalIP or Hostname"},
		{"host in defaults", "n1", n1, Target{Endpoint: Endpoint{Host: "x", Auth: keyAuth}}, "each node has its own address"},
		{"no auth", "n1", n1, Target{}, "authentication is not configured"},
		{"bastion without auth", "n1", n1, Target{Endpoint: Endpoint{Auth: keyAuth}, Bastion: &Endpoint{Host: "j"}}, "bastion authentication is not configured"},
		{"pinned and insecure", "n1", n1, Target{Endpoint: Endpoint{Auth: keyAuth, HostKey: HostKeyPolicy{PinnedKeys: "x", InsecureIgnoreHostKey: true}}}, "both pinned and ignored"},
		{"bad pinned key", "n1", n1, Target{Endpoint: Endpoint{Auth: keyAuth, HostKey: HostKeyPolicy{PinnedKeys: "not a key"}}}, "authorized_keys format"},
		{"bad port", "n1", n1, Target{Endpoint: Endpoint{Port: 70000, Auth: keyAuth}}, "port 70000"},
		{"key and key file", "n1", n1, Target{Endpoint: Endpoint{Auth: Auth{PrivateKey: "k", PrivateKeyFile: "f"}}}, "set only one"},
		{"negative timeout", "n1", n1, Target{Endpoint: Endpoint{Auth: keyAuth}, CommandTimeout: -time.Second}, "must not be negative"},
	}
	for _, tt := range errTests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Resolve(tt.node, tt.obj, tt.defaults, overrides)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func assertTarget(t *testing.T, got, want Target) {
	t.Helper()
	if (got.Bastion == nil) != (want.Bastion == nil) || (got.Bastion != nil && *got.Bastion != *want.Bastion) {
		t.Errorf("bastion = %+v, want %+v", got.Bastion, want.Bastion)
	}
	got.Bastion, want.Bastion = nil, nil
	if got != want {
		t.Errorf("target = %+v, want %+v", got, want)
	}
}

func TestPoolKey(t *testing.T) {
	base := Endpoint{Host: "h", Port: 22, User: "root", Auth: Auth{Password: "secret-pw"}}
	key := base.poolKey(nil)
	if !strings.HasPrefix(key, "root@h:22#") {
		t.Errorf("key %q does not start with user@host:port", key)
	}
	if strings.Contains(key, "secret-pw") {
		t.Errorf("key %q holds the password", key)
	}
	if base.poolKey(nil) != key {
		t.Error("key is not stable")
	}
	other := base
	other.Auth.Password = "other"
	insecure := base
	insecure.HostKey.InsecureIgnoreHostKey = true
	// Moving bytes between fields must change the key.
	shifted := base
	shifted.Auth = Auth{PrivateKeyFile: "ab", Passphrase: "c"}
	shifted2 := base
	shifted2.Auth = Auth{PrivateKeyFile: "a", Passphrase: "bc"}
	keys := map[string]string{
		"base":      key,
		"password":  other.poolKey(nil),
		"insecure":  insecure.poolKey(nil),
		"bastion":   base.poolKey(&Endpoint{Host: "j", Port: 22, User: "root"}),
		"shifted":   shifted.poolKey(nil),
		"shifted2":  shifted2.poolKey(nil),
		"otherUser": Endpoint{Host: "h", Port: 22, User: "u", Auth: base.Auth}.poolKey(nil),
	}
	seen := map[string]string{}
	for name, k := range keys {
		if prev, dup := seen[k]; dup {
			t.Errorf("%s and %s share the pool key %q", name, prev, k)
		}
		seen[k] = name
	}
}

func TestExpandHome(t *testing.T) {
	t.Setenv("HOME", "/home/tester")
	for in, want := range map[string]string{
		"~":                "/home/tester",
		"~/.ssh/id":        "/home/tester/.ssh/id",
		"/etc/ssh/x":       "/etc/ssh/x",
		"relative/~/x":     "relative/~/x",
		"~other/.ssh/id_x": "~other/.ssh/id_x",
	} {
		got, err := expandHome(in)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("expandHome(%q) = %q, want %q", in, got, want)
		}
	}
}
