// Package kube builds the one Kubernetes client the provider shares between its resources and
// data sources, from the provider's kubernetes block, on first use. It also holds small helpers
// the resources share: not-found checks, polling with a deadline, events for an object.
package kube

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Config is the provider's kubernetes block as plain Go values, after environment variables
// have been applied. It mirrors the settings of the hashicorp/kubernetes and hashicorp/helm
// providers so that users can carry their configuration over unchanged.
type Config struct {
	ConfigPath            string
	ConfigPaths           []string
	ConfigContext         string
	ConfigContextCluster  string
	ConfigContextAuthInfo string

	Host                 string
	Username             string
	Password             string
	Token                string
	ClusterCACertificate string
	ClientCertificate    string
	ClientKey            string
	Insecure             bool
	TLSServerName        string
	ProxyURL             string

	Exec *ExecConfig

	// QPS and Burst bound the client's request rate. Zero means the package defaults.
	QPS   float32
	Burst int
}

// ExecConfig runs an external command to obtain credentials, as in a kubeconfig's exec block.
type ExecConfig struct {
	APIVersion string
	Command    string
	Args       []string
	Env        map[string]string
}

const (
	// defaultQPS and defaultBurst are high enough not to slow a large apply: the requests follow
	// from the configuration (a few per resource), and the API server guards itself (API
	// Priority and Fairness). A lower limit (client-go's default is 5 a second; this client had
	// 50) made a destroy of a few hundred objects wait on the client's own rate limiter: see
	// DEVELOPMENT.md (Performance) for the measurements.
	defaultQPS   = 500
	defaultBurst = 1000
	// userAgent is also the field manager of client-go's writes (client-go takes it from the
	// user agent), so it is FieldManager.
	userAgent = FieldManager
)

// FieldManager is the one field manager of every write the provider makes: Helm's server-side
// applies and drift dry runs, and the classes, volumes and migrations written through client-go.
// It never changes between releases of the provider (Helm would otherwise take the binary's file
// name, terraform-provider-clusterstorage_vX.Y.Z, and each release would apply as a new manager:
// fields a newer chart drops would stay, owned by the old one).
const FieldManager = "terraform-provider-clusterstorage"

// ErrNoConfiguration is returned when the kubernetes block names no cluster at all and the
// provider does not run inside a pod.
var ErrNoConfiguration = errors.New("no Kubernetes configuration: set kubernetes.config_path " +
	"(or KUBE_CONFIG_PATH), kubernetes.config_paths (or KUBE_CONFIG_PATHS), or kubernetes.host " +
	"(or KUBE_HOST) with credentials in the provider's kubernetes block; inside a pod " +
	"(KUBERNETES_SERVICE_HOST set) the pod's service account is used instead")

// ServiceAccountDir is where a pod's service account token (token) and the cluster's CA
// certificate (ca.crt) are mounted, read by the in-cluster configuration. Tests point it at files
// of their own.
var ServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// RESTConfig turns the configuration into a client-go rest.Config.
//
// With config_path or config_paths the kubeconfig files are loaded and every explicit setting
// (context, host, credentials...) overrides what they say, as in the hashicorp providers.
// Without them, host and credentials must be given directly. With neither, inside a pod
// (KUBERNETES_SERVICE_HOST set), the pod's service account is used, as in the hashicorp providers.
func (c Config) RESTConfig() (*rest.Config, error) {
	paths := c.kubeconfigPaths()
	if len(paths) == 0 && c.Host == "" {
		if os.Getenv("KUBERNETES_SERVICE_HOST") == "" {
			return nil, ErrNoConfiguration
		}
		cfg, err := inCluster()
		if err != nil {
			return nil, err
		}
		return c.finish(cfg), nil
	}

	overrides := &clientcmd.ConfigOverrides{
		CurrentContext: c.ConfigContext,
		Context: clientcmdapi.Context{
			Cluster:  c.ConfigContextCluster,
			AuthInfo: c.ConfigContextAuthInfo,
		},
		ClusterInfo: clientcmdapi.Cluster{
			Server:                c.Host,
			InsecureSkipTLSVerify: c.Insecure,
			TLSServerName:         c.TLSServerName,
			ProxyURL:              c.ProxyURL,
		},
		AuthInfo: clientcmdapi.AuthInfo{
			Username: c.Username,
			Password: c.Password,
			Token:    c.Token,
		},
	}
	if c.ClusterCACertificate != "" {
		overrides.ClusterInfo.CertificateAuthorityData = []byte(c.ClusterCACertificate)
	}
	if c.ClientCertificate != "" {
		overrides.AuthInfo.ClientCertificateData = []byte(c.ClientCertificate)
	}
	if c.ClientKey != "" {
		overrides.AuthInfo.ClientKeyData = []byte(c.ClientKey)
	}
	if c.Exec != nil {
		overrides.AuthInfo.Exec = c.Exec.clientcmd()
	}

	var loader clientcmd.ClientConfig
	if len(paths) > 0 {
		rules := &clientcmd.ClientConfigLoadingRules{Precedence: paths, WarnIfAllMissing: false}
		if err := checkFilesExist(paths); err != nil {
			return nil, err
		}
		loader = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	} else {
		loader = clientcmd.NewDefaultClientConfig(*clientcmdapi.NewConfig(), overrides)
	}

	cfg, err := loader.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("building the Kubernetes client configuration: %w", err)
	}
	return c.finish(cfg), nil
}

// finish applies the settings every client configuration gets: rate limits, user agent, and
// requests that wait out an API server that cannot be reached for a while (retryUnreachable).
func (c Config) finish(cfg *rest.Config) *rest.Config {
	cfg.QPS, cfg.Burst = defaultQPS, defaultBurst
	if c.QPS > 0 {
		cfg.QPS = c.QPS
	}
	if c.Burst > 0 {
		cfg.Burst = c.Burst
	}
	cfg.UserAgent = userAgent
	cfg.Wrap(retryUnreachable)
	return cfg
}

// inCluster is the pod's own configuration: the API server from KUBERNETES_SERVICE_HOST and
// _PORT, the service account token (re-read when it rotates) and the cluster CA from
// ServiceAccountDir.
func inCluster() (*rest.Config, error) {
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if port == "" {
		port = "443"
	}
	token := filepath.Join(ServiceAccountDir, "token")
	ca := filepath.Join(ServiceAccountDir, "ca.crt")
	for _, f := range []string{token, ca} {
		if !fileExists(f) {
			return nil, fmt.Errorf("KUBERNETES_SERVICE_HOST is set, so the provider uses the pod's service "+
				"account, but %s does not exist: mount the service account token "+
				"(automountServiceAccountToken: true) or configure the provider's kubernetes block", f)
		}
	}
	return &rest.Config{
		Host:            "https://" + net.JoinHostPort(host, port),
		BearerTokenFile: token,
		TLSClientConfig: rest.TLSClientConfig{CAFile: ca},
	}, nil
}

func (c Config) kubeconfigPaths() []string {
	var paths []string
	if c.ConfigPath != "" {
		paths = append(paths, c.ConfigPath)
	}
	for _, p := range c.ConfigPaths {
		if p != "" {
			paths = append(paths, p)
		}
	}
	for i, p := range paths {
		paths[i] = expandHome(p)
	}
	return paths
}

func (e *ExecConfig) clientcmd() *clientcmdapi.ExecConfig {
	exec := &clientcmdapi.ExecConfig{
		APIVersion:      e.APIVersion,
		Command:         e.Command,
		Args:            e.Args,
		InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
	}
	for name, value := range e.Env {
		exec.Env = append(exec.Env, clientcmdapi.ExecEnvVar{Name: name, Value: value})
	}
	return exec
}

func checkFilesExist(paths []string) error {
	var missing []string
	for _, p := range paths {
		if !fileExists(p) {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("kubeconfig file not found: %s (from kubernetes.config_path / config_paths "+
			"or KUBE_CONFIG_PATH / KUBE_CONFIG_PATHS)", strings.Join(missing, ", "))
	}
	return nil
}
