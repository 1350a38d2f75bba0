package backend_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
)

// TestAccStorageBackend_chartSources installs from an oci:// registry, then points the same
// release at a local chart directory and at a repository with basic auth and its own CA: the
// chart and values are unchanged, so those are in-place updates that do not upgrade.
func TestAccStorageBackend_chartSources(t *testing.T) {
	acctest.RunsUnder(t, acctest.FirstCLIOnly)
	f := newFixture(t)
	class := acctest.RandomName("acc-hostpath")
	oci := acctest.StartOCIRegistry(t, acctest.ChartsDir())
	secure := acctest.StartChartRepoWith(t, acctest.ChartsDir(), acctest.ChartRepoOptions{Username: "u", Password: "s3cret", TLS: true})
	config := func(source string) string {
		return acctest.ProviderConfig() + fmt.Sprintf(`
resource "clusterstorage_storage_backend" "test" {
  type      = "openebs"
  namespace = %q
  version   = "4.4.0"
  openebs = {
    hostpath_class_name = %q
    volume_snapshot_crds = false
  }
%s
}
`, f.ns, class, source)
	}
	revision := func(n int64) []statecheck.StateCheck {
		return []statecheck.StateCheck{
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("revision"), knownvalue.Int64Exact(n)),
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("chart_version"), knownvalue.StringExact("4.4.0")),
		}
	}
	update := resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate)}}

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy:             f.checkReleaseGone("openebs"),
		Steps: []resource.TestStep{
			{
				Config:            config(fmt.Sprintf("  repository = %q\n  repository_plain_http = true", oci)),
				ConfigStateChecks: revision(1),
			},
			{
				Config:            config(fmt.Sprintf("  repository = \"\"\n  chart = %q", filepath.Join(acctest.ChartsDir(), "openebs-4.4"))),
				ConfigPlanChecks:  update,
				ConfigStateChecks: revision(1),
			},
			{
				Config: config(fmt.Sprintf("  repository = %q\n  repository_username = \"u\"\n  repository_password = \"s3cret\"\n  repository_ca_file = %q",
					secure.URL, secure.CAFile)),
				ConfigPlanChecks:  update,
				ConfigStateChecks: revision(1),
			},
			{
				Config: config(fmt.Sprintf("  repository = %q\n  repository_username = \"u\"\n  repository_password = \"wrong\"\n  repository_ca_file = %q",
					secure.URL, secure.CAFile)),
				ExpectError: acctest.ErrorWords("401"),
			},
		},
	})
}
