package localpv_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
)

// TestAccLocalPV_rbac creates (with its directory, over SSH), updates, imports and destroys a
// volume with a kubeconfig whose only rights are examples/rbac/local-pv.yaml's ClusterRole.
func TestAccLocalPV_rbac(t *testing.T) {
	f := newFixture(t)
	name := acctest.RandomName("acc-pv-rbac")
	kubeconfig := acctest.RoleKubeconfig(t, f.client, name, "local-pv.yaml", nil)
	dir := filepath.Join(f.root, "rbac", "vol")
	t.Cleanup(func() { // a destroy the role does not allow leaves the volume: remove it as admin
		err := f.client.CoreV1().PersistentVolumes().Delete(context.Background(), name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleaning up: %v", err)
		}
	})
	volume := func(capacity string) string {
		return acctest.WithKubeconfig(f.config(""), kubeconfig) + acctest.LoadConfig(t, "rbac.tf", name, f.node, dir, capacity)
	}

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy:             f.checkDestroyed(name),
		Steps: []resource.TestStep{
			{Config: volume("1Gi")},
			{Config: volume("2Gi")},
			{
				ResourceName:            addr,
				ImportState:             true,
				ImportStateId:           name,
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"timeouts"},
			},
		},
	})
}
