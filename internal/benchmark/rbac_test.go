package benchmark_test

import (
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest/benchtest"
)

// TestAccStorageBenchmark_rbac runs a benchmark of a class (a claim, a pod, its log, the static
// volume made Available again) and caches it, then reads the cache, with a kubeconfig bound to
// exactly examples/rbac/storage-benchmark.yaml's ClusterRole and its Role in the test's namespace.
func TestAccStorageBenchmark_rbac(t *testing.T) {
	e := benchtest.Setup(t)
	class := e.Class()
	pv, _ := e.LocalPV(class, "")
	kubeconfig := acctest.RoleKubeconfig(t, e.Client, acctest.RandomName("acc-bench-rbac"), "storage-benchmark.yaml", map[string]string{"default": e.NS})
	config := acctest.WithKubeconfig(acctest.ProviderConfig(), kubeconfig) + fmt.Sprintf(`
data "clusterstorage_storage_benchmark" "test" {
  storage_class = %q
  namespace     = %q
  node          = %q
  max_age       = "1h"
%s%s}
`, class, e.NS, e.Node, benchtest.PodAttributes(), short)
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: config,
				ConfigStateChecks: []statecheck.StateCheck{
					plausible(true, true),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("cached"), knownvalue.Bool(false)),
				},
				Check: resource.ComposeTestCheckFunc(
					benchtest.Check(func() error { return e.NoLeftovers(true) }),
					benchtest.Check(func() error { return e.VolumeAvailable(pv) }),
				),
			},
			{
				Config: config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("cached"), knownvalue.Bool(true)),
				},
			},
		},
	})
}
