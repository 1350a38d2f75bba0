// Package acctest is the acceptance-test harness: which cluster the tests use, the provider
// factories, and the real services tests start (sshd, a Helm chart repository). It is imported
// only by tests.
package acctest

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/protoserver"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/provider"
)

// KubeconfigEnv names the environment variable that points the acceptance tests at a cluster of
// the user's choosing (kind, k3s...). Without it the tests use the project's local cluster.
const KubeconfigEnv = "CLUSTERSTORAGE_ACC_KUBECONFIG"

// ProviderFactories serves the provider in-process to the Terraform CLI under test, through
// protoserver as main.go serves it.
var ProviderFactories = map[string]func() (tfprotov6.ProviderServer, error){
	"clusterstorage": func() (tfprotov6.ProviderServer, error) {
		s, err := providerserver.NewProtocol6WithError(testProvider)()
		if err != nil {
			return nil, err
		}
		return protoserver.New(s), nil
	},
}

var testProvider = provider.New("test")()

// Kubeconfig returns the path of the kubeconfig the tests use.
func Kubeconfig() string {
	if path := os.Getenv(KubeconfigEnv); path != "" {
		return path
	}
	return filepath.Join(RepoRoot(), ".cluster", "kubeconfig")
}

// PreCheck fails the test early, with what to do, when no cluster is reachable.
func PreCheck(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(Kubeconfig()); err != nil {
		t.Fatalf("no cluster for acceptance tests: %v. Run `make dev-cluster` (or set %s to a kubeconfig).", err, KubeconfigEnv)
	}
}

// ProviderConfig is the provider block every acceptance test configuration starts with.
func ProviderConfig() string {
	return fmt.Sprintf("provider \"clusterstorage\" {\n  kubernetes {\n    config_path = %q\n  }\n}\n", Kubeconfig())
}

// Kube returns a clientset for the test cluster, to check what the provider did. Outside an
// acceptance run (TF_ACC unset) it skips the test, as terraform-plugin-testing itself does.
func Kube(t testing.TB) kubernetes.Interface {
	t.Helper()
	if os.Getenv("TF_ACC") == "" {
		t.Skip("acceptance test: runs with TF_ACC=1 (make test)")
	}
	PreCheck(t)
	cfg, err := clientcmd.BuildConfigFromFlags("", Kubeconfig())
	if err != nil {
		t.Fatalf("loading %s: %v", Kubeconfig(), err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("creating a Kubernetes client: %v", err)
	}
	return client
}

// RandomName returns a name unique to this run, safe as a Kubernetes object name.
func RandomName(prefix string) string {
	return fmt.Sprintf("%s-%s", prefix, strings.ToLower(rand.Text()[:8]))
}

// RepoRoot finds the repository root (the directory holding go.mod) above the working directory.
func RepoRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return "."
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(d, "main.go")); err == nil {
				return d
			}
		}
		if filepath.Dir(d) == d {
			return dir
		}
	}
}

// ErrorWords matches an error message whose words Terraform may have wrapped onto several
// lines: each run of spaces in text matches any whitespace.
func ErrorWords(text string) *regexp.Regexp {
	words := strings.Fields(text)
	for i, w := range words {
		words[i] = regexp.QuoteMeta(w)
	}
	return regexp.MustCompile(strings.Join(words, `\s+`))
}

// ErrorRegexp matches an error diagnostic against the regular expression pattern however
// Terraform wrapped its lines: every space in pattern matches any run of white space, and '.'
// matches newlines too. Unlike ErrorWords, pattern is not quoted: `\(`, `.*` and `(a|b)` are
// regular expression syntax.
func ErrorRegexp(pattern string) *regexp.Regexp {
	return regexp.MustCompile("(?s)" + strings.ReplaceAll(pattern, " ", `\s+`))
}
