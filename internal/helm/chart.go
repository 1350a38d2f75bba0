package helm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"helm.sh/helm/v4/pkg/action"
	ci "helm.sh/helm/v4/pkg/chart"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/getter"
	"helm.sh/helm/v4/pkg/registry"
	repo "helm.sh/helm/v4/pkg/repo/v1"
)

// Source says where a chart comes from. Exactly one form applies:
//   - Repository is an http(s):// chart repository URL and Chart the chart's
//     name in its index.yaml;
//   - Chart is an oci:// reference (Repository empty, or an oci:// prefix that
//     Chart is appended to);
//   - Chart is a local chart directory or .tgz archive (Repository empty).
type Source struct {
	Repository string
	Chart      string
	// Version is an exact version or a semver constraint ("~1.7"); empty
	// means the newest stable version.
	Version  string
	Username string
	Password string //nolint:gosec // a credential the caller passes through, never logged
	// CAFile is a PEM bundle used to verify the repository's certificate.
	CAFile string
	// CertFile and KeyFile are a PEM client certificate and its key, for
	// repositories and registries that require TLS client authentication.
	CertFile string
	KeyFile  string
	// Insecure skips TLS certificate verification.
	Insecure bool
	// PlainHTTP talks to an oci:// registry over http instead of https.
	PlainHTTP bool
}

// String describes the source without credentials.
func (s Source) String() string {
	v := s.Version
	if v == "" {
		v = "latest"
	}
	switch {
	case s.Repository != "":
		return fmt.Sprintf("%s from %s (version %s)", s.Chart, s.Repository, v)
	default:
		return fmt.Sprintf("%s (version %s)", s.Chart, v)
	}
}

// IsOCI reports whether the source is an OCI registry reference.
func (s Source) IsOCI() bool {
	return registry.IsOCI(s.Repository) || registry.IsOCI(s.Chart)
}

// Validate checks that the source has one usable form.
func (s Source) Validate() error {
	switch {
	case s.Chart == "":
		return errors.New("chart must be set")
	case (s.CertFile == "") != (s.KeyFile == ""):
		return errors.New("a client certificate needs both its certificate file and its key file")
	case s.IsOCI():
		return nil
	case s.Repository != "":
		u, err := url.Parse(s.Repository)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("repository %q must be an http(s):// or oci:// URL", s.Repository)
		}
		if strings.Contains(s.Chart, "/") {
			return fmt.Errorf("chart %q must be a chart name when repository is set", s.Chart)
		}
		return nil
	default:
		return nil // a local path; LocateChart reports when it does not exist
	}
}

// LocateChart fetches (or reads) the chart that src names and loads it,
// checking that its dependencies are present. Downloads are cached in the
// client's cache directory by chart digest.
func (c *Client) LocateChart(ctx context.Context, src Source) (*chart.Chart, error) {
	if err := src.Validate(); err != nil {
		return nil, err
	}
	var (
		ch  *chart.Chart
		err error
	)
	switch {
	case src.IsOCI():
		ch, err = c.pullOCI(ctx, src)
	case src.Repository != "":
		ch, err = c.fetchFromRepo(ctx, src)
	default:
		ch, err = loadLocal(src)
	}
	if err != nil {
		return nil, err
	}
	if req := ch.Metadata.Dependencies; req != nil {
		deps := make([]ci.Dependency, len(req))
		for i, d := range req {
			deps[i] = d
		}
		if err := action.CheckDependencies(ch, deps); err != nil {
			return nil, fmt.Errorf("chart %s: %w", src, err)
		}
	}
	return ch, nil
}

func loadLocal(src Source) (*chart.Chart, error) {
	if _, err := os.Stat(src.Chart); err != nil {
		return nil, fmt.Errorf("chart %q is not a repository chart, an oci:// reference or an existing local path: %w", src.Chart, err)
	}
	ch, err := loader.Load(src.Chart)
	if err != nil {
		return nil, fmt.Errorf("loading chart %s: %w", src.Chart, err)
	}
	if src.Version != "" && ch.Metadata.Version != src.Version {
		return nil, fmt.Errorf("local chart %s has version %s, not the requested %s", src.Chart, ch.Metadata.Version, src.Version)
	}
	return ch, nil
}

// httpGetter returns a getter for src's repository. Like helm, it sends the
// credentials only to the repository's own scheme and host (WithURL), not to
// charts the index places elsewhere.
func (c *Client) httpGetter(src Source) (getter.Getter, error) {
	opts := []getter.Option{
		getter.WithURL(src.Repository),
		getter.WithInsecureSkipVerifyTLS(src.Insecure),
		getter.WithUserAgent("terraform-provider-clusterstorage"),
	}
	if src.CAFile != "" || src.CertFile != "" {
		opts = append(opts, getter.WithTLSClientConfig(src.CertFile, src.KeyFile, src.CAFile))
	}
	if src.Username != "" || src.Password != "" {
		opts = append(opts, getter.WithBasicAuth(src.Username, src.Password))
	}
	return getter.NewHTTPGetter(opts...)
}

// fetchFromRepo reads the repository's index.yaml, picks the version, and
// downloads the archive (or reuses the cached copy with the same digest).
func (c *Client) fetchFromRepo(ctx context.Context, src Source) (*chart.Chart, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	g, err := c.httpGetter(src)
	if err != nil {
		return nil, err
	}
	base := strings.TrimSuffix(src.Repository, "/")
	c.log("fetching chart repository index %s/index.yaml", base)
	buf, err := g.Get(base + "/index.yaml")
	if err != nil {
		return nil, fmt.Errorf("fetching index of chart repository %s: %w", src.Repository, err)
	}
	if err := os.MkdirAll(c.cacheDir, 0o700); err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(base))
	indexPath := filepath.Join(c.cacheDir, "index-"+hex.EncodeToString(sum[:8])+".yaml")
	if err := os.WriteFile(indexPath, buf.Bytes(), 0o600); err != nil {
		return nil, err
	}
	index, err := repo.LoadIndexFile(indexPath)
	if err != nil {
		return nil, fmt.Errorf("reading index of chart repository %s: %w", src.Repository, err)
	}
	cv, err := index.Get(src.Chart, src.Version)
	if err != nil {
		return nil, fmt.Errorf("chart %s: %w", src, err)
	}
	if len(cv.URLs) == 0 {
		return nil, fmt.Errorf("chart %s: the repository index lists no download URL", src)
	}
	chartURL, err := repo.ResolveReferenceURL(src.Repository, cv.URLs[0])
	if err != nil {
		return nil, err
	}

	cached := ""
	if cv.Digest != "" {
		cached = filepath.Join(c.cacheDir, fmt.Sprintf("%s-%s-%s.tgz", cv.Name, cv.Version, cv.Digest[:min(16, len(cv.Digest))]))
		if data, err := os.ReadFile(cached); err == nil && digestOf(data) == cv.Digest {
			c.log("using cached chart %s %s", cv.Name, cv.Version)
			return loader.LoadArchive(bytes.NewReader(data))
		}
	}

	c.log("downloading chart %s %s from %s", cv.Name, cv.Version, chartURL)
	data, err := g.Get(chartURL)
	if err != nil {
		return nil, fmt.Errorf("downloading chart %s: %w", src, err)
	}
	if cv.Digest != "" {
		if got := digestOf(data.Bytes()); got != cv.Digest {
			return nil, fmt.Errorf("chart %s: downloaded archive has digest %s, the index says %s", src, got, cv.Digest)
		}
		if err := os.WriteFile(cached, data.Bytes(), 0o600); err != nil {
			c.log("could not cache chart archive: %v", err)
		}
	}
	ch, err := loader.LoadArchive(bytes.NewReader(data.Bytes()))
	if err != nil {
		return nil, fmt.Errorf("loading chart %s: %w", src, err)
	}
	return ch, nil
}

func digestOf(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// pullOCI pulls a chart from an OCI registry. Credentials are kept in memory;
// the registry client's credentials file lives in the cache directory, never
// in ~/.config/helm.
func (c *Client) pullOCI(ctx context.Context, src Source) (*chart.Chart, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ref := src.Chart
	if registry.IsOCI(src.Repository) {
		ref = strings.TrimSuffix(src.Repository, "/") + "/" + strings.TrimPrefix(src.Chart, "/")
	}
	if err := os.MkdirAll(c.cacheDir, 0o700); err != nil {
		return nil, err
	}
	opts := []registry.ClientOption{
		registry.ClientOptCredentialsFile(filepath.Join(c.cacheDir, "registry-config.json")),
		registry.ClientOptWriter(logWriter{c.log}),
	}
	if src.PlainHTTP {
		opts = append(opts, registry.ClientOptPlainHTTP())
	}
	if src.Username != "" || src.Password != "" {
		opts = append(opts, registry.ClientOptBasicAuth(src.Username, src.Password))
	}
	if src.CAFile != "" || src.CertFile != "" || src.Insecure {
		hc, err := registryHTTPClient(src)
		if err != nil {
			return nil, err
		}
		opts = append(opts, registry.ClientOptHTTPClient(hc))
	}
	rc, err := registry.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	host := strings.TrimPrefix(ref, registry.OCIScheme+"://")
	nameRef := host
	if src.Version != "" {
		// An exact version becomes the tag; a constraint is resolved
		// against the registry's tags.
		tag := src.Version
		if !isExactVersion(tag) {
			tags, err := rc.Tags(nameRef)
			if err != nil {
				return nil, fmt.Errorf("listing tags of %s: %w", ref, err)
			}
			tag, err = pickVersion(tags, src.Version)
			if err != nil {
				return nil, fmt.Errorf("chart %s: %w", src, err)
			}
		}
		nameRef = nameRef + ":" + strings.ReplaceAll(tag, "+", "_")
	} else if !strings.Contains(lastSegment(nameRef), ":") {
		tags, err := rc.Tags(nameRef)
		if err != nil {
			return nil, fmt.Errorf("listing tags of %s: %w", ref, err)
		}
		tag, err := pickVersion(tags, "")
		if err != nil {
			return nil, fmt.Errorf("chart %s: %w", src, err)
		}
		nameRef = nameRef + ":" + strings.ReplaceAll(tag, "+", "_")
	}
	c.log("pulling chart %s", nameRef)
	res, err := rc.Pull(nameRef, registry.PullOptWithChart(true))
	if err != nil {
		return nil, fmt.Errorf("pulling chart %s: %w", src, err)
	}
	ch, err := loader.LoadArchive(bytes.NewReader(res.Chart.Data))
	if err != nil {
		return nil, fmt.Errorf("loading chart %s: %w", src, err)
	}
	return ch, nil
}

func lastSegment(ref string) string {
	if i := strings.LastIndex(ref, "/"); i >= 0 {
		return ref[i+1:]
	}
	return ref
}

type logWriter struct{ log Logf }

func (w logWriter) Write(p []byte) (int, error) {
	if s := strings.TrimSpace(string(p)); s != "" {
		w.log("%s", s)
	}
	return len(p), nil
}
