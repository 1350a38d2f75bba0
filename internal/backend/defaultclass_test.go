package backend_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

// TestAccStorageBackend_defaultClassDemotion: a backend whose class is the default takes the mark
// from a default class that existed before it (made by the test, as k3s's local-path is), in the
// same apply; an upgrade takes it again after something put it back. Whatever classes were
// default before the test are default again at its end.
func TestAccStorageBackend_defaultClassDemotion(t *testing.T) {
	acctest.RunsUnder(t, acctest.FirstCLIOnly)
	g := newGuard(t)
	g.defaultClass = true
	ctx := context.Background()
	before := defaultClasses(t, g)
	t.Cleanup(func() {
		for _, name := range before {
			if err := markDefault(context.Background(), g, name); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("cleanup: restoring the default mark of StorageClass %s: %v", name, err)
			}
		}
	})
	other := acctest.RandomName("acc-was-default")
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: other, Annotations: map[string]string{kube.DefaultClassAnnotation: "true"}},
		Provisioner: "example.com/none"}
	if _, err := g.client.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := g.client.StorageV1().StorageClasses().Delete(context.Background(), other, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Logf("cleanup: deleting StorageClass %s: %v", other, err)
		}
	})

	onlyDefault := func(*terraform.State) error {
		got := defaultClasses(t, g)
		if len(got) != 1 || got[0] != g.class {
			return fmt.Errorf("default classes are %v, want only %s", got, g.class)
		}
		return nil
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy:             g.checkReleaseGone("longhorn"),
		Steps: []resource.TestStep{
			{
				Config: g.longhorn(true, "", ""),
				Check:  onlyDefault,
			},
			{
				// Something (k3s on restart) marks the other class default again; the next
				// upgrade takes the mark once more.
				PreConfig: func() {
					if err := markDefault(ctx, g, other); err != nil {
						t.Fatal(err)
					}
				},
				Config: g.longhorn(true, `    { name = "longhornManager.resources.requests.cpu", value = "15m" },`, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				Check: onlyDefault,
			},
		},
	})
}

// defaultClasses lists the StorageClasses marked default.
func defaultClasses(t *testing.T, g *guard) []string {
	t.Helper()
	list, err := g.client.StorageV1().StorageClasses().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i := range list.Items {
		if kube.IsDefaultClass(&list.Items[i]) {
			out = append(out, list.Items[i].Name)
		}
	}
	return out
}

func markDefault(ctx context.Context, g *guard, name string) error {
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:"true"}}}`, kube.DefaultClassAnnotation))
	_, err := g.client.StorageV1().StorageClasses().Patch(ctx, name, k8stypes.MergePatchType, patch, metav1.PatchOptions{})
	return err
}
