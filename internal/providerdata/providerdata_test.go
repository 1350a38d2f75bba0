package providerdata

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

func TestFrom(t *testing.T) {
	data := &Data{}
	for _, c := range []struct {
		name    string
		in      any
		want    *Data
		wantErr string
	}{
		{name: "not configured yet", in: nil},
		{name: "the provider's data", in: data, want: data},
		{name: "another type", in: "data", wantErr: "Expected *providerdata.Data, got string"},
		{name: "a Data value, not a pointer", in: Data{}, wantErr: "got providerdata.Data"},
	} {
		var diags diag.Diagnostics
		got := From(c.in, &diags)
		if got != c.want {
			t.Errorf("%s: From = %p, want %p", c.name, got, c.want)
		}
		switch {
		case c.wantErr == "" && diags.HasError():
			t.Errorf("%s: unexpected diagnostics %v", c.name, diags)
		case c.wantErr != "" && (!diags.HasError() || !strings.Contains(diags.Errors()[0].Detail(), c.wantErr)):
			t.Errorf("%s: diagnostics %v, want an error saying %q", c.name, diags, c.wantErr)
		}
	}
}

func TestKubeClient(t *testing.T) {
	for _, c := range []struct {
		name        string
		data        *Data
		wantSummary string
	}{
		{name: "nil data", data: nil, wantSummary: "Provider not configured"},
		{name: "no clients", data: &Data{}, wantSummary: "Provider not configured"},
		{name: "configuration unknown until apply", data: &Data{Kube: kube.NewDeferredClients([]string{"kubernetes.host"})}, wantSummary: "Cannot reach the Kubernetes cluster"},
		{name: "a client", data: &Data{Kube: kube.NewClients(kube.Config{Host: "https://127.0.0.1:1"})}},
	} {
		var diags diag.Diagnostics
		client := c.data.KubeClient(&diags)
		if c.wantSummary == "" {
			if client == nil || diags.HasError() {
				t.Errorf("%s: client %v, diagnostics %v", c.name, client, diags)
			}
			continue
		}
		if client != nil || !diags.HasError() || diags.Errors()[0].Summary() != c.wantSummary {
			t.Errorf("%s: client %v, diagnostics %v; want no client and %q", c.name, client, diags, c.wantSummary)
		}
	}
}

// TestSSH: whether nodes can be reached, and what a node lookup says when they cannot.
func TestSSH(t *testing.T) {
	clients := kube.NewClients(kube.Config{Host: "https://127.0.0.1:1"})
	for _, c := range []struct {
		name    string
		data    *Data
		ready   bool
		wantErr string
	}{
		{name: "nil data", data: nil, wantErr: "was not configured"},
		{name: "no kubernetes clients", data: &Data{Nodes: &NodeAccess{Configured: true}}, wantErr: "was not configured"},
		{name: "no node access", data: &Data{Kube: clients}, wantErr: "has no ssh block"},
		{name: "no ssh block", data: &Data{Kube: clients, Nodes: &NodeAccess{}}, wantErr: "has no ssh block"},
		{name: "ssh unknown until apply", data: &Data{Kube: clients, Nodes: &NodeAccess{Configured: true, Unknown: []string{"ssh", "nodes"}}},
			wantErr: "the provider's ssh and nodes depend on values computed during apply"},
		{name: "configured", data: &Data{Kube: clients, Nodes: &NodeAccess{Configured: true}}, ready: true},
	} {
		if got := c.data.SSHReady(); got != c.ready {
			t.Errorf("%s: SSHReady = %v, want %v", c.name, got, c.ready)
		}
		if c.wantErr == "" {
			continue
		}
		// Host and HostFor refuse before any request: the lookup would go to 127.0.0.1:1.
		_, err := c.data.Host(context.Background(), "node-1")
		if err == nil || !strings.Contains(err.Error(), c.wantErr) {
			t.Errorf("%s: Host: %v, want an error saying %q", c.name, err, c.wantErr)
		}
		_, err = c.data.HostFor(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}})
		if err == nil || !strings.Contains(err.Error(), c.wantErr) {
			t.Errorf("%s: HostFor: %v, want an error saying %q", c.name, err, c.wantErr)
		}
	}
	if _, err := (*Data)(nil).Node(context.Background(), "node-1"); err == nil {
		t.Error("Node on nil data: no error")
	}
}

// TestNodeReadOnce: a node is read from the API server once per Data, also by concurrent
// lookups; a failed lookup is not remembered; a node the cluster lacks is an error naming the
// nodes it has. The API server is an HTTP server of the test's own that answers as one does.
func TestNodeReadOnce(t *testing.T) {
	var gets atomic.Int32
	var failNext atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/v1/nodes":
			_ = json.NewEncoder(w).Encode(corev1.NodeList{Items: []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}, {ObjectMeta: metav1.ObjectMeta{Name: "node-2"}}}}) //nolint:errcheck // the client reports a broken answer
		case "/api/v1/nodes/node-1":
			gets.Add(1)
			if failNext.Swap(false) {
				w.WriteHeader(http.StatusForbidden)
				_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Reason: metav1.StatusReasonForbidden, Code: http.StatusForbidden, Message: "nodes \"node-1\" is forbidden"}) //nolint:errcheck // as above
				return
			}
			_ = json.NewEncoder(w).Encode(corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{"zone": "a"}}}) //nolint:errcheck // as above
		default:
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Reason: metav1.StatusReasonNotFound, Code: http.StatusNotFound, Message: "not found"}) //nolint:errcheck // as above
		}
	}))
	defer srv.Close()
	d := New(kube.NewClients(kube.Config{Host: srv.URL}), &NodeAccess{})
	ctx := context.Background()

	failNext.Store(true)
	if _, err := d.Node(ctx, "node-1"); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Fatalf("first lookup, refused: %v", err)
	}
	var wg sync.WaitGroup
	nodes := make([]*corev1.Node, 8)
	errs := make([]error, 8)
	for i := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nodes[i], errs[i] = d.Node(ctx, "node-1")
		}()
	}
	wg.Wait()
	for i := range nodes {
		if errs[i] != nil || nodes[i] == nil || nodes[i].Labels["zone"] != "a" {
			t.Fatalf("lookup %d: %v, %v", i, nodes[i], errs[i])
		}
		if nodes[i] != nodes[0] {
			t.Errorf("lookup %d returned another Node than lookup 0", i)
		}
	}
	if n := gets.Load(); n != 2 {
		t.Errorf("%d GETs of node-1, want 2 (the refused one, then one for eight lookups)", n)
	}
	if _, err := d.Node(ctx, "node-9"); err == nil || !strings.Contains(err.Error(), `node "node-9" not found in the cluster; its nodes are: node-1, node-2`) {
		t.Errorf("a node the cluster lacks: %v", err)
	}
}
