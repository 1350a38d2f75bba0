package kube

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Clients is the provider's shared connection to one cluster. It is created by the provider's
// Configure and handed to every resource and data source; the clients inside are built on the
// first call that needs them, so a plan whose cluster does not exist yet does not fail.
type Clients struct {
	config  Config
	unknown string

	once    sync.Once
	rest    *rest.Config
	typed   kubernetes.Interface
	dynamic dynamic.Interface
	err     error
}

// NewClients returns Clients that will connect with config on first use.
func NewClients(config Config) *Clients {
	return &Clients{config: config}
}

// NewDeferredClients returns Clients whose configuration is not known yet (it depends on values
// computed during apply). Every use reports which attributes were unknown.
func NewDeferredClients(unknownAttributes []string) *Clients {
	return &Clients{unknown: strings.Join(unknownAttributes, ", ")}
}

func (c *Clients) init() {
	c.once.Do(func() {
		if c.unknown != "" {
			c.err = fmt.Errorf("the provider's kubernetes configuration is not known yet (%s depend "+
				"on values computed during apply); the cluster cannot be reached before they are known", c.unknown)
			return
		}
		cfg, err := c.config.RESTConfig()
		if err != nil {
			c.err = err
			return
		}
		typed, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			c.err = fmt.Errorf("creating the Kubernetes client: %w", err)
			return
		}
		dyn, err := dynamic.NewForConfig(cfg)
		if err != nil {
			c.err = fmt.Errorf("creating the Kubernetes dynamic client: %w", err)
			return
		}
		c.rest, c.typed, c.dynamic = cfg, typed, dyn
	})
}

// Typed returns the client-go clientset.
func (c *Clients) Typed() (kubernetes.Interface, error) {
	c.init()
	return c.typed, c.err
}

// Dynamic returns the dynamic client, for kinds without typed clients (custom resources).
func (c *Clients) Dynamic() (dynamic.Interface, error) {
	c.init()
	return c.dynamic, c.err
}

// REST returns the rest.Config the clients were built from (for Helm and pod logs).
func (c *Clients) REST() (*rest.Config, error) {
	c.init()
	if c.err != nil {
		return nil, c.err
	}
	return rest.CopyConfig(c.rest), nil
}

func expandHome(path string) string {
	if path == "~" || strings.HasPrefix(path, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, strings.TrimPrefix(path, "~"))
		}
	}
	return path
}

func fileExists(path string) bool {
	info, err := os.Stat(path)
	return err == nil && !info.IsDir()
}
