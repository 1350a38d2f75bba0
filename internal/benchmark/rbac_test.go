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
	r := benchtest.SetupRBAC(t, "acc-bench-rbac")
	config := acctest.WithKubeconfig(acctest.ProviderConfig(), r.Kubeconfig) + fmt.Sprintf(`
data "clusterstorage_storage_benchmark" "test" {
  storage_class = %q
  namespace     = %q
  node          = %q
  max_age       = "1h"
%s%s}
`, r.Class, r.NS, r.Node, benchtest.PodAttributes(), short)
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
				Check: r.Clean(),
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
