package helm

import (
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

var _ genericclioptions.RESTClientGetter = (*RESTClientGetter)(nil)

// RESTClientGetter adapts a *rest.Config to the genericclioptions.RESTClientGetter
// interface that the Helm SDK expects, without reading any kubeconfig file. It
// keeps one in-memory discovery cache and one deferred REST mapper so that Helm
// can invalidate and reset them after installing CRDs.
type RESTClientGetter struct {
	config    *rest.Config
	namespace string

	once      sync.Once
	discovery discovery.CachedDiscoveryInterface
	mapper    meta.RESTMapper
	err       error
}

// NewRESTClientGetter returns a getter over a copy of config whose default
// namespace is namespace.
func NewRESTClientGetter(config *rest.Config, namespace string) *RESTClientGetter {
	return &RESTClientGetter{config: rest.CopyConfig(config), namespace: namespace}
}

// ToRESTConfig returns a copy of the configuration, so callers may change it.
func (g *RESTClientGetter) ToRESTConfig() (*rest.Config, error) {
	return rest.CopyConfig(g.config), nil
}

func (g *RESTClientGetter) init() {
	g.once.Do(func() {
		cfg := rest.CopyConfig(g.config)
		// Discovery of a cluster with many CRDs makes many requests at once;
		// raise the limits the way kubectl does for its discovery client.
		if cfg.Burst < 300 {
			cfg.Burst = 300
		}
		dc, err := discovery.NewDiscoveryClientForConfig(cfg)
		if err != nil {
			g.err = err
			return
		}
		g.discovery = memory.NewMemCacheClient(dc)
		g.mapper = restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(g.discovery), g.discovery, nil)
	})
}

// ToDiscoveryClient returns the shared in-memory cached discovery client.
func (g *RESTClientGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	g.init()
	return g.discovery, g.err
}

// ToRESTMapper returns the shared discovery-backed REST mapper; it is
// resettable (meta.ResettableRESTMapper), which Helm relies on after CRDs are
// created.
func (g *RESTClientGetter) ToRESTMapper() (meta.RESTMapper, error) {
	g.init()
	return g.mapper, g.err
}

// ToRawKubeConfigLoader returns a clientcmd.ClientConfig that serves the
// rest.Config and the namespace; it never touches the file system.
func (g *RESTClientGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	return &staticClientConfig{config: g.config, namespace: g.namespace}
}

// staticClientConfig is a clientcmd.ClientConfig over an in-memory rest.Config.
type staticClientConfig struct {
	config    *rest.Config
	namespace string
}

func (c *staticClientConfig) RawConfig() (clientcmdapi.Config, error) {
	const name = "clusterstorage"
	raw := clientcmdapi.NewConfig()
	raw.Clusters[name] = &clientcmdapi.Cluster{
		Server:                   c.config.Host,
		CertificateAuthorityData: c.config.CAData,
		CertificateAuthority:     c.config.CAFile,
		InsecureSkipTLSVerify:    c.config.Insecure,
		TLSServerName:            c.config.ServerName,
	}
	raw.AuthInfos[name] = &clientcmdapi.AuthInfo{}
	raw.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: c.namespace}
	raw.CurrentContext = name
	return *raw, nil
}

func (c *staticClientConfig) ClientConfig() (*rest.Config, error) {
	return rest.CopyConfig(c.config), nil
}

func (c *staticClientConfig) Namespace() (string, bool, error) {
	if c.namespace == "" {
		return "default", false, nil
	}
	return c.namespace, true, nil
}

func (c *staticClientConfig) ConfigAccess() clientcmd.ConfigAccess {
	// Only used by commands that write kubeconfig files, which Helm's actions
	// never do; an empty loading rules object keeps it away from ~/.kube.
	return &clientcmd.ClientConfigLoadingRules{}
}
