package comparison_test

import (
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/compare"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest/benchtest"
)

// TestAccStorageComparison_rbacCached compares a local-volume class with the node's disk (over
// SSH), with max_age, then plans again: the second read reuses the cached results and runs no fio
// (cached, and measured_at is the first read's). Both reads use a
// kubeconfig bound to exactly examples/rbac/storage-benchmark.yaml: its ClusterRole, its Role in
// the comparison's namespace and its comparison Role in the backend namespace.
func TestAccStorageComparison_rbacCached(t *testing.T) {
	r := benchtest.SetupRBAC(t, "acc-cmp-rbac", "openebs")
	sshd := acctest.StartSSHD(t)
	diskDir := t.TempDir()
	config := acctest.WithKubeconfig(acctest.ProviderConfigSSH(sshd, r.Node), r.Kubeconfig) + fmt.Sprintf(`
data "clusterstorage_storage_comparison" "test" {
  targets = {
    disk     = { node_path = %q }
    local_pv = { storage_class = %q, backend_namespace = %q }
  }
  baseline  = "disk"
  rounds    = 2
  node      = %q
  namespace = %q
  runtime   = "1s"
  size      = "16M"
  max_age   = "1h"
%s}
`, diskDir, r.Class, r.Namespaces["openebs"], r.Node, r.NS, benchtest.PodAttributes())
	measuredAt := statecheck.CompareValue(compare.ValuesSame())
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(cmpAddr, tfjsonpath.New("cached"), knownvalue.Bool(false)),
					statecheck.ExpectKnownValue(cmpAddr, tfjsonpath.New("results").AtMapKey("local_pv").AtMapKey("memory").AtMapKey("pods"), knownvalue.Int64Exact(0)),
					measuredAt.AddStateValue(cmpAddr, tfjsonpath.New("measured_at")),
					comparisonPlausible([]string{"disk", "local_pv"}, 2),
				},
				Check: r.Clean(),
			},
			{
				Config: config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(cmpAddr, tfjsonpath.New("cached"), knownvalue.Bool(true)),
					measuredAt.AddStateValue(cmpAddr, tfjsonpath.New("measured_at")),
					comparisonPlausible([]string{"disk", "local_pv"}, 2),
				},
				Check: benchtest.Check(func() error { return r.NoLeftovers(true) }),
			},
		},
	})
}
