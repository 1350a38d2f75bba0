package capacity_test

import (
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/capacity"
)

// TestAccStorageCapacity_rbac reads a class's available volumes and a CSI class's published
// capacity with a kubeconfig bound to exactly examples/rbac/storage-capacity.yaml's ClusterRole.
func TestAccStorageCapacity_rbac(t *testing.T) {
	e := setup(t)
	local := e.class(capacity.NoProvisioner)
	e.localPV(local, "1Gi", e.node)
	csi := e.class("csi.acc.clusterstorage.io")
	e.csiCapacity(csi, &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/hostname": e.node}}, "10Gi", "4Gi")
	kubeconfig := acctest.RoleKubeconfig(t, e.client, acctest.RandomName("acc-cap-rbac"), "storage-capacity.yaml", nil)
	data := func(class string) string {
		return acctest.WithKubeconfig(acctest.ProviderConfig(), kubeconfig) +
			fmt.Sprintf("data \"clusterstorage_storage_capacity\" \"test\" {\n  storage_class = %q\n}\n", class)
	}
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: data(local),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("available_volumes").AtMapKey("count"), knownvalue.Int64Exact(1)),
				},
			},
			{
				Config: data(csi),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("csi_storage_capacity").AtMapKey("capacity_bytes"), knownvalue.Int64Exact(10<<30)),
				},
			},
		},
	})
}
