package acctest

import (
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// StartAPIProxy serves the test cluster's API server over plain HTTP on 127.0.0.1 until the test
// ends, and returns its URL. It forwards each request with the caller's own Authorization
// header and nothing else: it verifies the API server with the kubeconfig's CA but adds none of
// the kubeconfig's credentials, so a pod's service account token is authorised exactly as if the
// pod called the API server itself.
//
// It exists for fixture charts whose hook Jobs read the API with busybox wget (on the node's
// network, which the local cluster's pod policy gives every pod; no other HTTP client in the
// images tools/kube/cluster.sh builds): busybox's TLS client cannot
// complete a handshake with an API server that has an ECDSA certificate (handshake failure,
// alert 40), as the local cluster's has.
func StartAPIProxy(t testing.TB) string {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", Kubeconfig())
	if err != nil {
		t.Fatalf("loading %s: %v", Kubeconfig(), err)
	}
	target, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatalf("API server URL %q: %v", cfg.Host, err)
	}
	// Only how to trust the server: no client certificate, token or exec plugin.
	anonymous := &rest.Config{Host: cfg.Host, TLSClientConfig: rest.TLSClientConfig{
		CAFile: cfg.CAFile, CAData: cfg.CAData, ServerName: cfg.ServerName, Insecure: cfg.Insecure,
	}}
	transport, err := rest.TransportFor(anonymous)
	if err != nil {
		t.Fatalf("API server transport: %v", err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = transport
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listening for the API proxy: %v", err)
	}
	srv := &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}
