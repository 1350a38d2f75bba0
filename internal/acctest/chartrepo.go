package acctest

import (
	"crypto/subtle"
	"encoding/pem"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/repo"
)

// ChartRepoOptions tunes the chart repository StartChartRepoWith serves.
type ChartRepoOptions struct {
	// Username and Password, when set, are required as HTTP basic auth.
	Username string
	Password string
	// TLS serves https with a certificate for 127.0.0.1 whose CA is written
	// to ChartRepo.CAFile.
	TLS bool
}

// ChartRepo is a running Helm chart repository.
type ChartRepo struct {
	URL string
	// CAFile is the PEM file that verifies the server's certificate (TLS only).
	CAFile string
	// Dir holds the packaged charts and index.yaml.
	Dir string
}

// StartChartRepo packages every chart directory under chartsDir (any
// directory holding a Chart.yaml; its charts/ subcharts go into its archive),
// writes index.yaml, and serves them over plain HTTP on 127.0.0.1 until the
// test ends. It returns the repository URL.
func StartChartRepo(t testing.TB, chartsDir string) string {
	t.Helper()
	return StartChartRepoWith(t, chartsDir, ChartRepoOptions{}).URL
}

// StartChartRepoWith is StartChartRepo with basic auth and/or TLS.
func StartChartRepoWith(t testing.TB, chartsDir string, opts ChartRepoOptions) ChartRepo {
	t.Helper()
	dir := t.TempDir()
	n := 0
	err := filepath.WalkDir(chartsDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if _, err := os.Stat(filepath.Join(path, "Chart.yaml")); err != nil {
			return nil //nolint:nilerr // not a chart directory: keep looking below it
		}
		ch, err := loader.LoadDir(path)
		if err != nil {
			return err
		}
		if _, err := chartutil.Save(ch, dir); err != nil {
			return err
		}
		n++
		return fs.SkipDir // subcharts are part of this chart's archive
	})
	if err != nil {
		t.Fatalf("packaging charts under %s: %v", chartsDir, err)
	}
	if n == 0 {
		t.Fatalf("no chart (directory with a Chart.yaml) under %s", chartsDir)
	}

	files := http.FileServer(http.Dir(dir))
	handler := files
	if opts.Username != "" || opts.Password != "" {
		handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			u, p, ok := r.BasicAuth()
			if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(opts.Username)) != 1 ||
				subtle.ConstantTimeCompare([]byte(p), []byte(opts.Password)) != 1 {
				w.Header().Set("WWW-Authenticate", `Basic realm="charts"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			files.ServeHTTP(w, r)
		})
	}

	srv := httptest.NewUnstartedServer(handler)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listening for the chart repository: %v", err)
	}
	_ = srv.Listener.Close()
	srv.Listener = ln
	out := ChartRepo{Dir: dir}
	if opts.TLS {
		srv.StartTLS()
		caFile := filepath.Join(t.TempDir(), "ca.pem")
		cert := srv.Certificate()
		if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), 0o600); err != nil {
			t.Fatal(err)
		}
		out.CAFile = caFile
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	out.URL = srv.URL

	index, err := repo.IndexDirectory(dir, srv.URL)
	if err != nil {
		t.Fatalf("indexing charts: %v", err)
	}
	index.SortEntries()
	if err := index.WriteFile(filepath.Join(dir, "index.yaml"), 0o644); err != nil {
		t.Fatalf("writing index.yaml: %v", err)
	}
	return out
}

// ChartsDir is the fixture charts directory of this package
// (internal/acctest/testdata/charts).
func ChartsDir() string {
	return filepath.Join(RepoRoot(), "internal", "acctest", "testdata", "charts")
}
