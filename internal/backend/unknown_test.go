package backend_test

import (
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
)

// TestAccStorageBackend_unknownAtPlan: set, set_sensitive and the typed settings built by
// expressions unknown until apply (a for over a resource's outputs, a condition on one) plan
// without a value conversion error. What is known is still checked at plan; raw values are
// checked against the typed settings once known, before anything is installed.
func TestAccStorageBackend_unknownAtPlan(t *testing.T) {
	acctest.RunsUnder(t, acctest.EveryCLI)
	acctest.Kube(t)
	ns := acctest.RandomName("acc-backend")
	config := func(version, openebs, set string) string {
		return acctest.ProviderConfig() + fmt.Sprintf(`
resource "terraform_data" "v" {
  input = ["true"]
}
resource "clusterstorage_storage_backend" "test" {
  type          = "openebs"
  repository    = "http://127.0.0.1:1/never-reached"
  version       = %q
  namespace     = %q
  openebs       = %s
  set           = [for v in terraform_data.v.output : { name = %q, value = v }]
  set_sensitive = [for v in terraform_data.v.output : { name = "x.token", value = v }]
}`, version, ns, openebs, set)
	}
	unknownSettings := `length(terraform_data.v.output) > 0 ? { volume_snapshot_crds = false } : null`
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{
			{Config: config("4.0.1", unknownSettings, "x.y"), PlanOnly: true, ExpectNonEmptyPlan: true},
			{
				Config: config("4.0.1", `null
  longhorn      = { default_replica_count = 1 }`, "x.y"), PlanOnly: true,
				ExpectError: acctest.ErrorWords("The longhorn block only applies to type = \"longhorn\""),
			},
			{
				// Typed settings the version cannot carry are refused at plan while the raw values are unknown.
				Config: config("4.1.3", `{ alloy_enabled = true }`, "x.y"), PlanOnly: true,
				ExpectError: acctest.ErrorWords("openebs charts 4.0.x to 4.2.x have no Alloy"),
			},
			{
				Config:      config("4.0.1", `{ volume_snapshot_crds = false }`, "engines.local.lvm.enabled"),
				ExpectError: acctest.ErrorWords("raw values contradict the typed settings"),
			},
		},
	})
}
