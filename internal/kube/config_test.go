package kube

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const kubeconfigTwoContexts = `apiVersion: v1
kind: Config
clusters:
- name: prod
  cluster:
    server: https://prod.example:6443
- name: lab
  cluster:
    server: https://lab.example:6443
    insecure-skip-tls-verify: true
users:
- name: admin
  user:
    token: prod-token
- name: lab-user
  user:
    token: lab-token
contexts:
- name: prod
  context: {cluster: prod, user: admin}
- name: lab
  context: {cluster: lab, user: lab-user}
current-context: prod
`

func writeKubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(path, []byte(kubeconfigTwoContexts), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRESTConfig(t *testing.T) {
	path := writeKubeconfig(t)
	cases := map[string]struct {
		config     Config
		wantHost   string
		wantToken  string
		wantErrSub string
	}{
		"current context":  {config: Config{ConfigPath: path}, wantHost: "https://prod.example:6443", wantToken: "prod-token"},
		"explicit context": {config: Config{ConfigPath: path, ConfigContext: "lab"}, wantHost: "https://lab.example:6443", wantToken: "lab-token"},
		"context cluster override": {
			config:   Config{ConfigPath: path, ConfigContextCluster: "lab"},
			wantHost: "https://lab.example:6443", wantToken: "prod-token",
		},
		"host and token override the file": {
			config:   Config{ConfigPaths: []string{path}, Host: "https://other:6443", Token: "t"},
			wantHost: "https://other:6443", wantToken: "t",
		},
		"host without a file": {config: Config{Host: "https://direct:6443", Token: "x", Insecure: true}, wantHost: "https://direct:6443", wantToken: "x"},
		"missing file":        {config: Config{ConfigPath: "/nonexistent/kubeconfig"}, wantErrSub: "kubeconfig file not found: /nonexistent/kubeconfig"},
		"unknown context":     {config: Config{ConfigPath: path, ConfigContext: "nope"}, wantErrSub: `context "nope" does not exist`},
		"nothing":             {config: Config{}, wantErrSub: "no Kubernetes configuration"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg, err := tc.config.RESTConfig()
			if tc.wantErrSub != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErrSub) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErrSub)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Host != tc.wantHost || cfg.BearerToken != tc.wantToken {
				t.Errorf("host %q token %q, want %q %q", cfg.Host, cfg.BearerToken, tc.wantHost, tc.wantToken)
			}
			if cfg.QPS != defaultQPS || cfg.Burst != defaultBurst || cfg.UserAgent != userAgent {
				t.Errorf("client tuning: qps %v burst %d agent %q", cfg.QPS, cfg.Burst, cfg.UserAgent)
			}
		})
	}
}

func TestRESTConfigExec(t *testing.T) {
	cfg, err := Config{Host: "https://h:6443", Exec: &ExecConfig{
		APIVersion: "client.authentication.k8s.io/v1", Command: "get-token", Args: []string{"--cluster", "c"}, Env: map[string]string{"A": "1"},
	}}.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ExecProvider == nil || cfg.ExecProvider.Command != "get-token" || len(cfg.ExecProvider.Args) != 2 || cfg.ExecProvider.Env[0].Name != "A" {
		t.Errorf("exec provider = %+v", cfg.ExecProvider)
	}
}

func TestClientsAreLazy(t *testing.T) {
	// Building Clients never fails; the first use reports the problem, every time.
	c := NewClients(Config{})
	for range 2 {
		if _, err := c.Typed(); !errors.Is(err, ErrNoConfiguration) {
			t.Fatalf("Typed() = %v, want ErrNoConfiguration", err)
		}
	}
	d := NewDeferredClients([]string{"kubernetes.host"})
	if _, err := d.REST(); err == nil || !strings.Contains(err.Error(), "kubernetes.host") {
		t.Fatalf("deferred REST() = %v, want an error naming kubernetes.host", err)
	}
	ok := NewClients(Config{Host: "https://127.0.0.1:1", Token: "x"})
	if _, err := ok.Dynamic(); err != nil {
		t.Fatalf("Dynamic() = %v", err)
	}
}

// TestRESTConfigInCluster: with nothing configured inside a pod, the pod's service account is
// used; a missing token file says what to do.
func TestRESTConfigInCluster(t *testing.T) {
	dir := t.TempDir()
	old := ServiceAccountDir
	ServiceAccountDir = dir
	t.Cleanup(func() { ServiceAccountDir = old })

	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	if _, err := (Config{}).RESTConfig(); !errors.Is(err, ErrNoConfiguration) {
		t.Fatalf("outside a pod: got %v, want ErrNoConfiguration", err)
	}

	t.Setenv("KUBERNETES_SERVICE_HOST", "10.43.0.1")
	t.Setenv("KUBERNETES_SERVICE_PORT", "443")
	_, err := (Config{}).RESTConfig()
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "token")+" does not exist") {
		t.Fatalf("no token file: got %v", err)
	}

	for _, f := range []string{"token", "ca.crt"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := (Config{}).RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://10.43.0.1:443" || cfg.BearerTokenFile != filepath.Join(dir, "token") ||
		cfg.CAFile != filepath.Join(dir, "ca.crt") || cfg.UserAgent != userAgent {
		t.Fatalf("in-cluster config: host %q token file %q CA %q agent %q", cfg.Host, cfg.BearerTokenFile, cfg.CAFile, cfg.UserAgent)
	}

	// An explicit configuration wins over the pod's.
	cfg, err = (Config{Host: "https://other:6443", Token: "t"}).RESTConfig()
	if err != nil || cfg.Host != "https://other:6443" {
		t.Fatalf("explicit host inside a pod: %v %v", cfg, err)
	}
}
