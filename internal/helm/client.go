// Package helm wraps the Helm SDK for the provider: where a chart comes from
// (an HTTP(S) repository, an oci:// reference, a local directory or archive),
// install, upgrade, uninstall, status, and the repair of a release left pending
// by an interrupted apply. It has no Terraform types, so it can be tested and
// reused on its own.
package helm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"helm.sh/helm/v4/pkg/action"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// ErrNotFound is returned when a release does not exist.
var ErrNotFound = errors.New("helm release not found")

// Logf receives progress messages (Helm's own debug log included: actions
// started, resources waited for and why they are not ready yet). It must be
// safe for concurrent use.
type Logf func(format string, args ...any)

// Options configures a Client.
type Options struct {
	// CacheDir holds downloaded repository indexes and chart archives. It
	// defaults to a directory under os.TempDir(); nothing is read from or
	// written to ~/.helm, ~/.cache/helm or ~/.config/helm.
	CacheDir string
	// Log receives progress messages; nil discards them.
	Log Logf
	// Owner names the program that installs releases through this client
	// (e.g. "terraform-provider-clusterstorage"). Every install and upgrade
	// labels its release OwnerLabel=Owner, and Recover repairs only releases
	// with that label. Empty: releases are not labelled and Recover repairs
	// none.
	Owner string
}

// Client runs Helm actions against one cluster.
type Client struct {
	config   *rest.Config
	cacheDir string
	log      Logf
	owner    string
}

// New returns a Client for the cluster that config points at.
func New(config *rest.Config, opts Options) (*Client, error) {
	if config == nil {
		return nil, errors.New("helm: no Kubernetes REST configuration was given")
	}
	dir := opts.CacheDir
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "clusterstorage-helm-cache")
	}
	log := opts.Log
	if log == nil {
		log = func(string, ...any) {}
	}
	if opts.Owner != "" {
		if errs := validation.IsValidLabelValue(opts.Owner); len(errs) > 0 {
			return nil, fmt.Errorf("helm: owner %q is not a valid label value: %s", opts.Owner, strings.Join(errs, "; "))
		}
	}
	useFieldManager()
	return &Client{config: rest.CopyConfig(config), cacheDir: dir, log: log, owner: opts.Owner}, nil
}

// CacheDir returns the directory where charts and indexes are cached.
func (c *Client) CacheDir() string { return c.cacheDir }

// actionConfig returns a Helm action configuration whose releases are stored
// as Secrets in namespace (Helm's default driver), so releases made here are
// the same ones the helm CLI sees.
func (c *Client) actionConfig(namespace string) (*action.Configuration, error) {
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(logHandler{log: c.log}))
	getter := NewRESTClientGetter(c.config, namespace)
	if err := cfg.Init(getter, namespace, "secret"); err != nil {
		return nil, fmt.Errorf("initialising Helm for namespace %q: %w", namespace, err)
	}
	if dc, err := getter.ToDiscoveryClient(); err == nil {
		validateOnServer(cfg.KubeClient, dc)
	}
	return cfg, nil
}

// Clientset returns a typed Kubernetes client for the same cluster.
func (c *Client) Clientset() (kubernetes.Interface, error) {
	return kubernetes.NewForConfig(c.config)
}

// logHandler passes Helm's structured log (Helm 4 logs through log/slog: actions started,
// resources waited for and why they are not ready yet) to a Logf, one line a record.
type logHandler struct {
	log    Logf
	prefix string // the open groups, "a.b."
	attrs  string // the attributes added with WithAttrs, formatted
}

func (h logHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h logHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	b.WriteString(h.attrs)
	r.Attrs(func(a slog.Attr) bool {
		writeAttr(&b, h.prefix, a)
		return true
	})
	h.log("%s", b.String())
	return nil
}

func (h logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	var b strings.Builder
	b.WriteString(h.attrs)
	for _, a := range attrs {
		writeAttr(&b, h.prefix, a)
	}
	h.attrs = b.String()
	return h
}

func (h logHandler) WithGroup(name string) slog.Handler {
	if name != "" {
		h.prefix += name + "."
	}
	return h
}

func writeAttr(b *strings.Builder, prefix string, a slog.Attr) {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return
	}
	if a.Value.Kind() == slog.KindGroup {
		for _, g := range a.Value.Group() {
			writeAttr(b, prefix+a.Key+".", g)
		}
		return
	}
	fmt.Fprintf(b, " %s%s=%v", prefix, a.Key, a.Value)
}
