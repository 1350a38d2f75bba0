package backend_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"helm.sh/helm/v3/pkg/action"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/helm"
)

// providerOwner is the release label value the provider puts on the releases it installs
// (helm.OwnerLabel); a client with it acts as the provider did in an earlier, interrupted apply.
const providerOwner = "terraform-provider-clusterstorage"

// fixture is one test's cluster, namespace, Helm clients (to act outside Terraform and check
// what the provider did: helm as a person would, owned as the provider would) and chart
// repository serving the fixture charts.
type fixture struct {
	t      *testing.T
	client kubernetes.Interface
	rc     *rest.Config
	helm   *helm.Client
	owned  *helm.Client
	ns     string
	repo   string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	client := acctest.Kube(t)
	rc, err := clientcmd.BuildConfigFromFlags("", acctest.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	hc, err := helm.New(rc, helm.Options{CacheDir: t.TempDir(), Log: func(format string, args ...any) { t.Logf("helm: "+format, args...) }})
	if err != nil {
		t.Fatal(err)
	}
	owned, err := helm.New(rc, helm.Options{CacheDir: t.TempDir(), Owner: providerOwner})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, client: client, rc: rc, helm: hc, owned: owned, ns: acctest.RandomName("acc-backend"), repo: acctest.StartChartRepo(t, acctest.ChartsDir())}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		for _, name := range []string{"openebs", "longhorn"} {
			if err := hc.Uninstall(ctx, name, f.ns, helm.UninstallOptions{Wait: true, Timeout: time.Minute, DisableHooks: true}); err != nil {
				t.Logf("cleanup: %v", err)
			}
		}
		if err := client.CoreV1().Namespaces().Delete(ctx, f.ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Logf("cleanup: deleting namespace %s: %v", f.ns, err)
		}
	})
	return f
}

// chart returns a chart of the fixture repository, for actions taken outside Terraform.
func (f *fixture) chart(name, version string) *helm.Release {
	f.t.Helper()
	ch, err := f.helm.LocateChart(context.Background(), helm.Source{Repository: f.repo, Chart: name, Version: version})
	if err != nil {
		f.t.Fatal(err)
	}
	return &helm.Release{Name: name, Namespace: f.ns, Chart: ch}
}

// actionConfig gives direct access to the release storage (to fake an interrupted apply).
func (f *fixture) actionConfig() *action.Configuration {
	f.t.Helper()
	cfg := new(action.Configuration)
	if err := cfg.Init(helm.NewRESTClientGetter(f.rc, f.ns), f.ns, "secret", f.t.Logf); err != nil {
		f.t.Fatal(err)
	}
	return cfg
}

// checkReleaseGone is a CheckDestroy: the release and its workloads are gone.
func (f *fixture) checkReleaseGone(name string) func(*terraform.State) error {
	return func(*terraform.State) error {
		if st, err := f.helm.Get(name, f.ns); !errors.Is(err, helm.ErrNotFound) {
			return fmt.Errorf("release %s/%s still exists after destroy: %+v %v", f.ns, name, st, err)
		}
		return nil
	}
}

// release returns the live openebs release.
func (f *fixture) release() (*helm.Status, error) {
	return f.helm.Get("openebs", f.ns)
}

// checkFootprint compares the state's footprint with the requests of the running pods of the
// namespace, summed independently here.
func (f *fixture) checkFootprint() func(*terraform.State) error {
	return func(s *terraform.State) error {
		rs, ok := s.RootModule().Resources[addr]
		if !ok {
			return fmt.Errorf("%s not in state", addr)
		}
		pods, err := f.client.CoreV1().Pods(f.ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		var n, containers int
		var cpu, mem, lim int64
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodPending || p.DeletionTimestamp != nil {
				continue
			}
			n++
			for _, c := range p.Spec.Containers {
				containers++
				cpu += c.Resources.Requests.Cpu().MilliValue()
				mem += c.Resources.Requests.Memory().Value()
				lim += c.Resources.Limits.Memory().Value()
			}
		}
		want := map[string]string{
			"footprint.pods":                    fmt.Sprint(n),
			"footprint.containers":              fmt.Sprint(containers),
			"footprint.cpu_requests_millicores": fmt.Sprint(cpu),
			"footprint.memory_requests_bytes":   fmt.Sprint(mem),
			"footprint.memory_limits_bytes":     fmt.Sprint(lim),
		}
		for k, v := range want {
			if got := rs.Primary.Attributes[k]; got != v {
				return fmt.Errorf("%s = %s, but the pods of namespace %s sum to %s", k, got, f.ns, v)
			}
		}
		if n == 0 {
			return fmt.Errorf("no running pods in %s", f.ns)
		}
		return nil
	}
}
