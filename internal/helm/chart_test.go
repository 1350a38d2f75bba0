package helm_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"k8s.io/client-go/rest"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/helm"
)

func newOfflineClient(t *testing.T) *helm.Client {
	t.Helper()
	c, err := helm.New(&rest.Config{Host: "https://127.0.0.1:1"}, helm.Options{CacheDir: t.TempDir(), Log: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestLocateChartFromRepository(t *testing.T) {
	url := acctest.StartChartRepo(t, acctest.ChartsDir())
	c := newOfflineClient(t)
	ctx := context.Background()

	tests := []struct {
		chart, version, want string
	}{
		{"openebs", "4.0.1", "4.0.1"},
		{"openebs", "", "4.4.0"},
		{"openebs", "~4.0", "4.0.1"},
		{"longhorn", "1.7.2", "1.7.2"},
		{"longhorn", ">=1.8.0", "1.12.1"},
	}
	for _, tt := range tests {
		ch, err := c.LocateChart(ctx, helm.Source{Repository: url, Chart: tt.chart, Version: tt.version})
		if err != nil {
			t.Fatalf("%s %q: %v", tt.chart, tt.version, err)
		}
		if ch.Metadata.Name != tt.chart || ch.Metadata.Version != tt.want {
			t.Errorf("%s %q: got %s %s, want %s", tt.chart, tt.version, ch.Metadata.Name, ch.Metadata.Version, tt.want)
		}
	}
	// The second fetch of a version comes from the cache.
	if _, err := c.LocateChart(ctx, helm.Source{Repository: url + "/", Chart: "openebs", Version: "4.0.1"}); err != nil {
		t.Fatal(err)
	}
	matches, _ := filepath.Glob(filepath.Join(c.CacheDir(), "openebs-4.0.1-*.tgz"))
	if len(matches) != 1 {
		t.Errorf("cached archives: %q", matches)
	}

	for _, bad := range []helm.Source{
		{Repository: url, Chart: "openebs", Version: "9.9.9"},
		{Repository: url, Chart: "nosuchchart"},
		{Repository: "http://127.0.0.1:1", Chart: "openebs"},
		{Repository: "ftp://example", Chart: "openebs"},
		{Repository: url, Chart: "a/b"},
		{Repository: url},
	} {
		if _, err := c.LocateChart(ctx, bad); err == nil {
			t.Errorf("%+v: expected an error", bad)
		}
	}
}

func TestLocateChartAuthAndTLS(t *testing.T) {
	repo := acctest.StartChartRepoWith(t, acctest.ChartsDir(), acctest.ChartRepoOptions{Username: "u", Password: "p@ss", TLS: true})
	if !strings.HasPrefix(repo.URL, "https://127.0.0.1:") {
		t.Fatalf("url %s", repo.URL)
	}
	c := newOfflineClient(t)
	ctx := context.Background()

	ch, err := c.LocateChart(ctx, helm.Source{Repository: repo.URL, Chart: "longhorn", Version: "1.8.1", Username: "u", Password: "p@ss", CAFile: repo.CAFile})
	if err != nil {
		t.Fatal(err)
	}
	if ch.Metadata.Version != "1.8.1" {
		t.Fatalf("version %s", ch.Metadata.Version)
	}
	if _, err := c.LocateChart(ctx, helm.Source{Repository: repo.URL, Chart: "longhorn", Username: "u", Password: "p@ss", Insecure: true}); err != nil {
		t.Fatalf("insecure: %v", err)
	}
	if _, err := c.LocateChart(ctx, helm.Source{Repository: repo.URL, Chart: "longhorn", Username: "u", Password: "wrong", CAFile: repo.CAFile}); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("wrong password: %v", err)
	}
	if _, err := c.LocateChart(ctx, helm.Source{Repository: repo.URL, Chart: "longhorn", Username: "u", Password: "p@ss"}); err == nil {
		t.Fatal("an unknown CA must be refused")
	}
}

func TestLocateChartLocal(t *testing.T) {
	c := newOfflineClient(t)
	ctx := context.Background()
	dir := filepath.Join(acctest.ChartsDir(), "openebs-4.4")

	ch, err := c.LocateChart(ctx, helm.Source{Chart: dir})
	if err != nil {
		t.Fatal(err)
	}
	if ch.Metadata.Version != "4.4.0" || len(ch.Dependencies()) != 8 {
		t.Fatalf("got %s with %d subcharts", ch.Metadata.Version, len(ch.Dependencies()))
	}

	loaded, err := loader.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	tgz, err := chartutil.Save(loaded, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if ch, err := c.LocateChart(ctx, helm.Source{Chart: tgz, Version: "4.4.0"}); err != nil || ch.Metadata.Name != "openebs" {
		t.Fatalf("archive: %v", err)
	}
	if _, err := c.LocateChart(ctx, helm.Source{Chart: tgz, Version: "4.0.1"}); err == nil {
		t.Fatal("a version mismatch must fail")
	}
	if _, err := c.LocateChart(ctx, helm.Source{Chart: filepath.Join(t.TempDir(), "missing")}); err == nil {
		t.Fatal("a missing path must fail")
	}

	// A chart whose declared subchart is missing is refused before install.
	broken := t.TempDir()
	if err := os.WriteFile(filepath.Join(broken, "Chart.yaml"), []byte("apiVersion: v2\nname: broken\nversion: 0.1.0\ndependencies:\n- name: absent\n  version: 1.0.0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := c.LocateChart(ctx, helm.Source{Chart: broken}); err == nil || !strings.Contains(err.Error(), "absent") {
		t.Fatalf("missing dependency: %v", err)
	}
}

func TestSourceValidateAndString(t *testing.T) {
	s := helm.Source{Repository: "https://charts.example", Chart: "longhorn", Version: "1.7.2", Password: "hunter2"}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(s.String(), "hunter2") {
		t.Fatal("String() leaks the password")
	}
	oci := helm.Source{Chart: "oci://127.0.0.1:5000/charts/openebs"}
	if !oci.IsOCI() || oci.Validate() != nil {
		t.Fatal("oci:// reference not recognised")
	}
	if (helm.Source{}).Validate() == nil {
		t.Fatal("an empty source must be invalid")
	}
}

func TestLocateChartFromOCIRegistry(t *testing.T) {
	prefix := acctest.StartOCIRegistry(t, acctest.ChartsDir())
	c := newOfflineClient(t)
	ctx := context.Background()

	tests := []struct {
		src  helm.Source
		want string
	}{
		{helm.Source{Chart: prefix + "/openebs", Version: "4.0.1", PlainHTTP: true}, "4.0.1"},
		{helm.Source{Chart: prefix + "/openebs", PlainHTTP: true}, "4.4.0"},
		{helm.Source{Chart: prefix + "/openebs:4.0.1", PlainHTTP: true}, "4.0.1"},
		{helm.Source{Repository: prefix, Chart: "longhorn", Version: "~1.7", PlainHTTP: true}, "1.7.3"},
	}
	for _, tt := range tests {
		ch, err := c.LocateChart(ctx, tt.src)
		if err != nil {
			t.Fatalf("%s: %v", tt.src, err)
		}
		if ch.Metadata.Version != tt.want {
			t.Errorf("%s: got %s, want %s", tt.src, ch.Metadata.Version, tt.want)
		}
	}
	if _, err := c.LocateChart(ctx, helm.Source{Chart: prefix + "/openebs", Version: "9.9.9", PlainHTTP: true}); err == nil {
		t.Error("a missing version must fail")
	}
	if _, err := c.LocateChart(ctx, helm.Source{Chart: prefix + "/openebs", Version: ">=5", PlainHTTP: true}); err == nil {
		t.Error("an unsatisfiable constraint must fail")
	}
}

// TestLocateChartClientCertAndInsecure: a repository that requires a TLS client certificate
// serves the chart only with CertFile and KeyFile; Insecure skips verifying the server's
// certificate (whose CA is not given), and without it that certificate is refused.
func TestLocateChartClientCertAndInsecure(t *testing.T) {
	charts := t.TempDir()
	if err := os.MkdirAll(filepath.Join(charts, "tiny"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(charts, "tiny", "Chart.yaml"), []byte("apiVersion: v2\nname: tiny\nversion: 0.1.0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	repo := acctest.StartChartRepoWith(t, charts, acctest.ChartRepoOptions{TLS: true, ClientCert: true})
	c := newOfflineClient(t)
	ctx := context.Background()
	src := helm.Source{Repository: repo.URL, Chart: "tiny", Version: "0.1.0", CAFile: repo.CAFile, CertFile: repo.CertFile, KeyFile: repo.KeyFile}

	if ch, err := c.LocateChart(ctx, src); err != nil || ch.Metadata.Name != "tiny" {
		t.Fatalf("with the client certificate: %v", err)
	}
	noCert := src
	noCert.CertFile, noCert.KeyFile = "", ""
	if _, err := c.LocateChart(ctx, noCert); err == nil {
		t.Fatal("without a client certificate the repository must refuse")
	}
	halfCert := src
	halfCert.KeyFile = ""
	if _, err := c.LocateChart(ctx, halfCert); err == nil || !strings.Contains(err.Error(), "both its certificate file and its key file") {
		t.Fatalf("a certificate without its key: %v", err)
	}
	insecure := src
	insecure.CAFile, insecure.Insecure = "", true
	if _, err := c.LocateChart(ctx, insecure); err != nil {
		t.Fatalf("insecure_skip_verify with the client certificate: %v", err)
	}
	unverified := src
	unverified.CAFile = ""
	if _, err := c.LocateChart(ctx, unverified); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("an unknown server CA without insecure: %v", err)
	}
}
