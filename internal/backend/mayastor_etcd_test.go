package backend_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
)

// TestAccStorageBackend_mayastorEtcdOnThreeNodes: Mayastor's etcd at the chart's default of 3
// replicas, whose hard pod anti-affinity needs three nodes, runs one replica on each node with a
// claim each on the release's own class; destroy then succeeds without force_destroy, because the
// guard does not count the release's own StatefulSet claims (they are not the user's data), and
// the release is gone.
func TestAccStorageBackend_mayastorEtcdOnThreeNodes(t *testing.T) {
	acctest.RunsUnder(t, acctest.FirstCLIOnly)
	acctest.RequireNodes(t, 3)
	f := newFixture(t, acctest.LockMayastorNode)
	class := acctest.RandomName("acc-hostpath")
	settings := fmt.Sprintf("    hostpath_class_name = %q\n    hostpath_base_path = %q\n    mayastor_enabled = true", class, t.TempDir())
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy:             f.checkReleaseGone("openebs"),
		Steps: []resource.TestStep{{
			PreConfig: f.labelMayastorNodes,
			Config:    f.openebs("4.4.0", settings, ""),
			Check: resource.ComposeTestCheckFunc(
				f.checkClaimBound("data-openebs-etcd-0"),
				f.checkClaimBound("data-openebs-etcd-1"),
				f.checkClaimBound("data-openebs-etcd-2"),
				f.checkEtcdSpread(3),
			),
		}},
	})
}

// checkEtcdSpread checks that the etcd StatefulSet's pods run on n different nodes.
func (f *fixture) checkEtcdSpread(n int) func(*terraform.State) error {
	return func(*terraform.State) error {
		pods, err := f.client.CoreV1().Pods(f.ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		nodes := map[string]string{}
		for _, p := range pods.Items {
			for _, ref := range p.OwnerReferences {
				if ref.Kind == "StatefulSet" && ref.Name == "openebs-etcd" {
					if other, ok := nodes[p.Spec.NodeName]; ok {
						return fmt.Errorf("etcd pods %s and %s both on node %s", other, p.Name, p.Spec.NodeName)
					}
					nodes[p.Spec.NodeName] = p.Name
				}
			}
		}
		if len(nodes) != n {
			return fmt.Errorf("etcd pods on %d node(s) (%v), want %d", len(nodes), nodes, n)
		}
		return nil
	}
}
