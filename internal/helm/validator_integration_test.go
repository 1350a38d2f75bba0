package helm_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"k8s.io/client-go/rest"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/helm"
)

// countingTransport counts the requests whose path starts with prefix.
type countingTransport struct {
	next   http.RoundTripper
	prefix string
	n      *atomic.Int64
}

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasPrefix(r.URL.Path, t.prefix) {
		t.n.Add(1)
	}
	return t.next.RoundTrip(r)
}

// configMapChart is a chart of one ConfigMap whose body is the given YAML below its metadata.
func configMapChart(body string) *chart.Chart {
	return &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: "v2", Name: "validated", Version: "0.1.0"},
		Values:   map[string]any{},
		Templates: []*common.File{{Name: "templates/cm.yaml", Data: []byte(`apiVersion: v1
kind: ConfigMap
metadata: {name: validated}
` + body)}},
	}
}

// TestIntegrationInstallValidatesOnServer: an install asks the API server for no OpenAPI document
// (kubectl's validator fetched one per group-version of the manifest, only to learn that the
// server validates fields itself), and a manifest with a field its kind does not have is still
// refused, by the server (fieldValidation=Strict).
func TestIntegrationInstallValidatesOnServer(t *testing.T) {
	k := needCluster(t)
	var openapi atomic.Int64
	rc := rest.CopyConfig(k.rc)
	rc.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return countingTransport{next: next, prefix: "/openapi/", n: &openapi}
	})
	c, err := helm.New(rc, helm.Options{CacheDir: t.TempDir(), Owner: testOwner, Log: func(format string, args ...any) {
		t.Logf("helm: "+format, args...)
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	t.Cleanup(func() {
		for _, name := range []string{"invalid", "validated"} {
			if err := c.Uninstall(context.Background(), name, k.ns, helm.UninstallOptions{Wait: true, Timeout: time.Minute}); err != nil {
				t.Logf("cleanup: %v", err)
			}
		}
	})

	_, err = c.Install(ctx, helm.Release{Name: "invalid", Namespace: k.ns, CreateNamespace: true, Chart: configMapChart("datax: {a: b}\n"), Timeout: time.Minute})
	if err == nil || !strings.Contains(err.Error(), ".datax: field not declared in schema") {
		t.Fatalf("installing a ConfigMap with an unknown field: %v, want the server's refusal of the field", err)
	}
	st, err := c.Install(ctx, helm.Release{Name: "validated", Namespace: k.ns, CreateNamespace: true, Chart: configMapChart("data: {a: b}\n"), Timeout: time.Minute})
	if err != nil || st.Status != "deployed" {
		t.Fatalf("installing a valid ConfigMap: %v", err)
	}
	if n := openapi.Load(); n != 0 {
		t.Fatalf("the installs made %d requests for OpenAPI documents, want none", n)
	}
}
