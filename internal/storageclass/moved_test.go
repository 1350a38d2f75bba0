package storageclass_test

import (
	"context"
	"fmt"
	"testing"

	fwresource "github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
)

// standInClass is kubernetes_storage_class_v1 as far as a move reads it (acctest.KubernetesStandIn;
// the real resource is kubernetes/resource_kubernetes_storage_class_v1.go): metadata.name and
// storage_provisioner only.
func standInClass(client kubernetes.Interface) fwresource.Resource {
	return &acctest.KubernetesStandIn{
		Type:       "kubernetes_storage_class_v1",
		Attributes: []string{"storage_provisioner"},
		Make: func(ctx context.Context, name string, a map[string]string) error {
			_, err := client.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{
				ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: a["storage_provisioner"],
			}, metav1.CreateOptions{})
			return err
		},
		Remove: func(ctx context.Context, name string) error {
			return client.StorageV1().StorageClasses().Delete(ctx, name, metav1.DeleteOptions{})
		},
	}
}

// TestAccStorageClass_movedFromKubernetes: a class kubernetes_storage_class_v1 made is moved into
// clusterstorage_storage_class with a `moved` block (Terraform 1.8+ and OpenTofu; older Terraform
// refuses a move across types, so the test runs where the CLI can): the plan is empty for a
// configuration that matches the class (the move imported it; nothing deleted or re-created: the
// class keeps its UID), and the resource manages it from then on (destroy deletes it).
func TestAccStorageClass_movedFromKubernetes(t *testing.T) {
	acctest.RunsUnder(t, acctest.EveryCLI)
	name := acctest.RandomName("acc-sc")
	client := acctest.Kube(t)
	addr := "clusterstorage_storage_class.test"
	var uid string
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_8_0)},
		ProtoV6ProviderFactories: acctest.FactoriesWith("kubernetes", func() fwresource.Resource { return standInClass(client) }),
		CheckDestroy:             checkDestroyed(client, name),
		Steps: []resource.TestStep{
			{
				Config: acctest.LoadConfig(t, "moved_from_kubernetes.tf", name),
				Check: checkClass(client, name, func(sc *storagev1.StorageClass) error {
					uid = string(sc.UID)
					return nil
				}),
			},
			{
				Config: acctest.ProviderConfig() + acctest.LoadConfig(t, "moved_from_kubernetes_2.tf", name),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionNoop),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("id"), knownvalue.StringExact(name)),
					// The move sets the identity, as an import does (Terraform 1.12+, OpenTofu).
					statecheck.ExpectIdentity(addr, map[string]knownvalue.Check{"name": knownvalue.StringExact(name)}),
				},
				Check: resource.ComposeTestCheckFunc(
					acctest.CheckMovedAway("kubernetes_storage_class_v1.local"),
					checkClass(client, name, func(sc *storagev1.StorageClass) error {
						if string(sc.UID) != uid {
							return fmt.Errorf("the class was re-created: UID %s, was %s", sc.UID, uid)
						}
						return nil
					}),
				),
			},
		},
	})
}
