package storageclass_test

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
)

// TestAccStorageClass_rbac creates, reads, updates and destroys a class with a kubeconfig whose
// only rights are examples/rbac/storage-class.yaml's ClusterRole, bound to a ServiceAccount made
// for the test: a verb the role lacks fails the test, so the example role (and README's table)
// cannot drift from what the resource calls.
func TestAccStorageClass_rbac(t *testing.T) {
	admin := acctest.Kube(t)
	name := acctest.RandomName("acc-sc-rbac")
	kubeconfig := acctest.RoleKubeconfig(t, admin, name, "storage-class.yaml", nil)
	provider := acctest.WithKubeconfig(acctest.ProviderConfig(), kubeconfig)
	t.Cleanup(func() { // a destroy the role does not allow leaves the class: remove it as admin
		err := admin.StorageV1().StorageClasses().Delete(context.Background(), name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleaning up: %v", err)
		}
	})

	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy:             checkDestroyed(admin, name),
		Steps: []resource.TestStep{
			{
				Config: provider + acctest.LoadConfig(t, "rbac.tf", name),
			},
			{
				Config: provider + acctest.LoadConfig(t, "rbac_2.tf", name),
			},
			{
				ResourceName:      "clusterstorage_storage_class.test",
				ImportState:       true,
				ImportStateVerify: true,
				ImportStateId:     name,
			},
		},
	})
}
