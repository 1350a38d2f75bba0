package acctest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"io"
	"io/fs"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/registry"
	repo "helm.sh/helm/v4/pkg/repo/v1"
)

// ChartRepoOptions tunes the chart repository StartChartRepoWith serves.
type ChartRepoOptions struct {
	// Username and Password, when set, are required as HTTP basic auth.
	Username string
	Password string
	// TLS serves https with a certificate for 127.0.0.1 whose CA is written
	// to ChartRepo.CAFile.
	TLS bool
	// ClientCert (with TLS) requires a TLS client certificate signed by a CA
	// of its own; a valid one is written to ChartRepo.CertFile and KeyFile.
	ClientCert bool
}

// ChartRepo is a running Helm chart repository.
type ChartRepo struct {
	URL string
	// CAFile is the PEM file that verifies the server's certificate (TLS only).
	CAFile string
	// CertFile and KeyFile are a client certificate the server accepts
	// (ClientCert only).
	CertFile string
	KeyFile  string
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
	if err := packageCharts(chartsDir, dir); err != nil {
		t.Fatal(err)
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
	if opts.TLS && opts.ClientCert {
		pool, certFile, keyFile := clientCA(t)
		srv.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool, MinVersion: tls.VersionTLS12}
		out.CertFile, out.KeyFile = certFile, keyFile
	}
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

// clientCA makes a CA and a client certificate it signed, written as PEM
// files; it returns the pool that verifies such certificates.
func clientCA(t testing.TB) (*x509.CertPool, string, string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "chart repository client CA"},
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "chart repository client"},
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "client.pem"), filepath.Join(dir, "client-key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return pool, certFile, keyFile
}

// ChartsDir is the fixture charts directory of this package
// (internal/acctest/testdata/charts).
func ChartsDir() string {
	return filepath.Join(RepoRoot(), "internal", "acctest", "testdata", "charts")
}

// packageCharts saves every chart directory under chartsDir (a directory with
// a Chart.yaml; its charts/ subcharts go into its archive) as a .tgz in dest.
func packageCharts(chartsDir, dest string) error {
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
		for _, release := range FixtureReleases(ch) {
			if _, err := chartutil.Save(release, dest); err != nil {
				return err
			}
			n++
		}
		return fs.SkipDir // subcharts are part of this chart's archive
	})
	if err != nil {
		return err
	}
	if n == 0 {
		return &fs.PathError{Op: "package charts", Path: chartsDir, Err: fs.ErrNotExist}
	}
	return nil
}

// Annotations of a fixture chart's Chart.yaml that make it stand in for several releases.
const (
	// AnnotationFixtureVersions lists the versions (space separated) the chart is packaged as.
	AnnotationFixtureVersions = "clusterstorage.io/fixture-versions"
	// annotationAppVersionPrefix is put before the version to make the appVersion ("v").
	annotationAppVersionPrefix = "clusterstorage.io/fixture-app-version-prefix"
	// annotationKubeVersion + "<major>.<minor>" is the kubeVersion of that minor's releases when
	// it differs from the Chart.yaml's.
	annotationKubeVersion = "clusterstorage.io/fixture-kube-version-"
)

// FixtureReleases returns a fixture chart once per version its Chart.yaml lists in
// AnnotationFixtureVersions, each with that version, its appVersion and kubeVersion; a chart
// without the annotation is returned as it is. One directory then stands in for every release
// of a version range, and its templates tell versions apart with `.Chart.Version`.
func FixtureReleases(ch *chart.Chart) []*chart.Chart {
	versions := strings.Fields(ch.Metadata.Annotations[AnnotationFixtureVersions])
	if len(versions) == 0 {
		return []*chart.Chart{ch}
	}
	out := make([]*chart.Chart, 0, len(versions))
	for _, v := range versions {
		c := *ch
		md := *ch.Metadata
		md.Version = v
		md.AppVersion = ch.Metadata.Annotations[annotationAppVersionPrefix] + v
		if parts := strings.SplitN(v, ".", 3); len(parts) == 3 {
			if kv, ok := ch.Metadata.Annotations[annotationKubeVersion+parts[0]+"."+parts[1]]; ok {
				md.KubeVersion = kv
			}
		}
		c.Metadata = &md
		out = append(out, &c)
	}
	return out
}

// StartOCIRegistry serves a minimal in-memory OCI distribution registry
// (plain HTTP on 127.0.0.1, no auth; enough of the API for Helm's push, pull
// and tag listing), pushes every chart under chartsDir to it with Helm's
// registry client, and returns the repository prefix, e.g.
// "oci://127.0.0.1:PORT/charts"; a chart is at "<prefix>/<name>:<version>".
func StartOCIRegistry(t testing.TB, chartsDir string) string {
	t.Helper()
	reg := &ociRegistry{blobs: map[string][]byte{}, manifests: map[string]ociManifest{}, uploads: map[string]bool{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listening for the OCI registry: %v", err)
	}
	srv := httptest.NewUnstartedServer(reg)
	_ = srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")

	dir := t.TempDir()
	if err := packageCharts(chartsDir, dir); err != nil {
		t.Fatal(err)
	}
	client, err := registry.NewClient(registry.ClientOptPlainHTTP(), registry.ClientOptWriter(io.Discard),
		registry.ClientOptCredentialsFile(filepath.Join(t.TempDir(), "config.json")))
	if err != nil {
		t.Fatal(err)
	}
	archives, _ := filepath.Glob(filepath.Join(dir, "*.tgz"))
	for _, a := range archives {
		data, err := os.ReadFile(a)
		if err != nil {
			t.Fatal(err)
		}
		ch, err := loader.LoadArchive(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		ref := host + "/charts/" + ch.Metadata.Name + ":" + ch.Metadata.Version
		if _, err := client.Push(data, ref); err != nil {
			t.Fatalf("pushing %s: %v", ref, err)
		}
	}
	return "oci://" + host + "/charts"
}

type ociManifest struct {
	mediaType string
	body      []byte
}

// ociRegistry implements the parts of the OCI distribution API that Helm
// uses. Repositories may contain slashes ("charts/openebs").
type ociRegistry struct {
	mu        sync.Mutex
	blobs     map[string][]byte      // digest -> content
	manifests map[string]ociManifest // repo@digest and repo:tag -> manifest
	uploads   map[string]bool
}

func ociDigest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func (r *ociRegistry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	path := req.URL.Path
	if path == "/v2/" || path == "/v2" {
		w.WriteHeader(http.StatusOK)
		return
	}
	if !strings.HasPrefix(path, "/v2/") {
		http.NotFound(w, req)
		return
	}
	path = strings.TrimPrefix(path, "/v2/")
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case strings.HasSuffix(path, "/tags/list"):
		repoName := strings.TrimSuffix(path, "/tags/list")
		tags := []string{}
		for k := range r.manifests {
			if rest, ok := strings.CutPrefix(k, repoName+":"); ok {
				tags = append(tags, rest)
			}
		}
		sort.Strings(tags)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"name": repoName, "tags": tags})
	case strings.Contains(path, "/blobs/uploads/"):
		repoName, id, _ := strings.Cut(path, "/blobs/uploads/")
		switch req.Method {
		case http.MethodPost:
			b := make([]byte, 8)
			_, _ = rand.Read(b)
			id = hex.EncodeToString(b)
			r.uploads[id] = true
			w.Header().Set("Location", "/v2/"+repoName+"/blobs/uploads/"+id)
			w.Header().Set("Range", "0-0")
			w.WriteHeader(http.StatusAccepted)
		case http.MethodPut:
			if !r.uploads[id] {
				http.Error(w, "unknown upload", http.StatusNotFound)
				return
			}
			body, err := io.ReadAll(req.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			d := req.URL.Query().Get("digest")
			if d != ociDigest(body) {
				http.Error(w, "digest mismatch", http.StatusBadRequest)
				return
			}
			delete(r.uploads, id)
			r.blobs[d] = body
			w.Header().Set("Location", "/v2/"+repoName+"/blobs/"+d)
			w.Header().Set("Docker-Content-Digest", d)
			w.WriteHeader(http.StatusCreated)
		default:
			w.WriteHeader(http.StatusMethodNotAllowed)
		}
	case strings.Contains(path, "/blobs/"):
		_, d, _ := strings.Cut(path, "/blobs/")
		b, ok := r.blobs[d]
		if !ok {
			http.Error(w, "blob unknown", http.StatusNotFound)
			return
		}
		w.Header().Set("Docker-Content-Digest", d)
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		if req.Method == http.MethodGet {
			_, _ = w.Write(b)
		}
	case strings.Contains(path, "/manifests/"):
		repoName, ref, _ := strings.Cut(path, "/manifests/")
		key := repoName + ":" + ref
		if strings.HasPrefix(ref, "sha256:") {
			key = repoName + "@" + ref
		}
		switch req.Method {
		case http.MethodPut:
			body, err := io.ReadAll(req.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			d := ociDigest(body)
			m := ociManifest{mediaType: req.Header.Get("Content-Type"), body: body}
			r.manifests[key] = m
			r.manifests[repoName+"@"+d] = m
			w.Header().Set("Docker-Content-Digest", d)
			w.Header().Set("Location", "/v2/"+repoName+"/manifests/"+d)
			w.WriteHeader(http.StatusCreated)
		case http.MethodGet, http.MethodHead:
			m, ok := r.manifests[key]
			if !ok {
				http.Error(w, "manifest unknown", http.StatusNotFound)
				return
			}
			w.Header().Set("Content-Type", m.mediaType)
			w.Header().Set("Docker-Content-Digest", ociDigest(m.body))
			w.Header().Set("Content-Length", strconv.Itoa(len(m.body)))
			if req.Method == http.MethodGet {
				_, _ = w.Write(m.body)
			}
		default:
			w.WriteHeader(http.StatusMethodNotAllowed)
		}
	default:
		http.NotFound(w, req)
	}
}
