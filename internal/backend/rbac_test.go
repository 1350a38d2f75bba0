package backend_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
)

// TestAccStorageBackend_rbac installs the OpenEBS fixture chart (its CRDs, cluster roles and
// bindings, the provisioner's Deployment, the hostpath class), updates it, reads it back (drift's
// server-side dry run, the footprint) and uninstalls it behind the destroy guard, with a
// kubeconfig bound to exactly examples/rbac/storage-backend.yaml's ClusterRole and its Role for
// the openebs namespace, made in the release's namespace, which exists first as the file says.
// The fixture's ClusterRole grants what the role does not hold (pods: create), so the install
// needs the role's escalate, and its binding the role's bind.
func TestAccStorageBackend_rbac(t *testing.T) {
	f := newFixture(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns}}
	if _, err := f.client.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubeconfig := acctest.RoleKubeconfig(t, f.client, acctest.RandomName("acc-backend-rbac"), "storage-backend.yaml", map[string]string{"openebs": f.ns})
	class := acctest.RandomName("acc-hostpath")
	base := t.TempDir()
	config := func(extra string) string {
		return acctest.WithKubeconfig(acctest.ProviderConfig(), kubeconfig) + fmt.Sprintf(`
resource "clusterstorage_storage_backend" "test" {
  type       = "openebs"
  repository = %q
  version    = "4.0.1"
  namespace  = %q
  openebs = {
    hostpath_class_name  = %q
    hostpath_base_path   = %q
    volume_snapshot_crds = false
  }
  %s
}
`, f.repo, f.ns, class, base, extra)
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy:             f.checkReleaseGone("openebs"),
		Steps: []resource.TestStep{
			{Config: config("")},
			{
				Config: config("max_history = 5"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
			},
		},
	})
}
