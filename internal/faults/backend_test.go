package faults_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/helm"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

// The backend workload is one clusterstorage_storage_backend: the OpenEBS 4.4 fixture chart from
// a chart repository the test serves, released as "openebs" in a namespace of the row's own (its
// prefix), its hostpath class named after the prefix. The fixture's slow Deployment becomes ready
// backendReadyAfter seconds (plus the round) after it starts, so that the install, and the upgrade
// an update row makes (the round changes the pod template), wait long enough for the fault to land
// during the wait.
const (
	backendRelease    = "openebs"
	backendReadyAfter = 14
	// backendTimeout is the install's and the upgrade's timeout: a killed one is in progress for
	// this long (and the recovery's margin) before the next apply may repair it.
	backendTimeout = 30 * time.Second
)

func backendConfig(repo, prefix string, round int) string {
	return acctest.ProviderConfig() + fmt.Sprintf(`
resource "clusterstorage_storage_backend" "b" {
  type       = "openebs"
  repository = %q
  version    = "4.4.0"
  namespace  = %q
  openebs = {
    hostpath_class_name  = "%s-hostpath"
    volume_snapshot_crds = false
  }
  set      = [{ name = "fixture.readyAfterSeconds", value = "%d" }]
  timeouts = { create = "%s", update = "%s" }
}
`, repo, prefix, prefix, backendReadyAfter+round, backendTimeout, backendTimeout)
}

// releases reads the test's Helm releases as the provider's own client does.
type releases struct {
	helm *helm.Client
}

func newReleases(t *testing.T) releases {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", acctest.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	hc, err := helm.New(rc, helm.Options{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return releases{helm: hc}
}

// status is the release's status in namespace ns, "" when there is none. The API server may be
// coming back from a fault: it is polled.
func (r releases) status(t *testing.T, ns string) string {
	t.Helper()
	status := ""
	err := kube.Poll(context.Background(), 200*time.Millisecond, 2*time.Minute, "reading the test's release", func(context.Context) (bool, string, error) {
		st, err := r.helm.Get(backendRelease, ns)
		switch {
		case errors.Is(err, helm.ErrNotFound):
			status = ""
		case err != nil:
			return kube.KeepPolling(err)
		default:
			status = st.Status
		}
		return true, "", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return status
}

// objects adds the release (backend/NAME) and the Deployments in namespace ns (deployment/NAME)
// to found: what a backend row's state may record, and what its destroy must remove.
func (r releases) objects(t *testing.T, client kubeClient, ns string, found objects) {
	t.Helper()
	if r.status(t, ns) != "" {
		found["backend/"+backendRelease] = ""
	}
	err := kube.Poll(context.Background(), 200*time.Millisecond, 2*time.Minute, "listing the release's Deployments", func(ctx context.Context) (bool, string, error) {
		list, err := client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return kube.KeepPolling(err)
		}
		for _, d := range list.Items {
			found["deployment/"+d.Name] = ""
		}
		return true, "", nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// recoverMargin is how long past a killed operation's timeout the next apply still takes it for
// running (helm.RecoverSkew), and 5 s more.
const recoverMargin = helm.RecoverSkew + 5*time.Second

// remove uninstalls what a failed row left of the release and deletes its namespace.
func (r releases) remove(t *testing.T, client kubeClient, ns string) {
	ctx := context.Background()
	if err := r.helm.Uninstall(ctx, backendRelease, ns, helm.UninstallOptions{Wait: true, DisableHooks: true, Timeout: 2 * time.Minute}); err != nil {
		t.Errorf("removing the leftover release: %v", err)
	}
	if err := client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !kube.IsNotFound(err) {
		t.Errorf("removing the row's namespace: %v", err)
	}
}
