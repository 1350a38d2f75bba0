package backend_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
)

// TestAccStorageBackend_writeOnly: set_wo and repository_password_wo (Terraform and OpenTofu
// 1.11+) reach Helm and never the state; the plan after the apply is empty although the release
// holds values state does not (their paths are left out of the drift check); a new set_wo value
// alone plans nothing, set_wo_revision applies it; and the write-only password is the one the
// repository sees.
func TestAccStorageBackend_writeOnly(t *testing.T) {
	acctest.RunsUnder(t, acctest.EveryCLI)
	f := newFixture(t)
	class := acctest.RandomName("acc-hostpath")
	repo := acctest.StartChartRepoWith(t, acctest.ChartsDir(), acctest.ChartRepoOptions{Username: "u", Password: "s3cret-repo", TLS: true})
	config := func(password, value string, revision int) string {
		return acctest.ProviderConfig() + fmt.Sprintf(`
resource "clusterstorage_storage_backend" "test" {
  type                   = "openebs"
  namespace              = %q
  version                = "4.4.0"
  repository             = %q
  repository_ca_file     = %q
  repository_username    = "u"
  repository_password_wo = %q
  openebs = {
    hostpath_class_name  = %q
    volume_snapshot_crds = false
  }
  set_wo = [
    { name = "writeOnlyProbe.token", value = %q },
    { name = "writeOnlyProbe.port", value = "8080", type = "string" },
  ]
  set_wo_revision = %d
}
`, f.ns, repo.URL, repo.CAFile, password, class, value, revision)
	}
	released := func(token string) resource.TestCheckFunc {
		return func(*terraform.State) error {
			st, err := f.release()
			if err != nil {
				return err
			}
			probe, _ := st.Values["writeOnlyProbe"].(map[string]any)
			if probe["token"] != token || probe["port"] != "8080" {
				return fmt.Errorf("the release's writeOnlyProbe values are %v, want token %q and port \"8080\" (a string)", probe, token)
			}
			return nil
		}
	}
	// Nothing written-only is anywhere in state.
	notInState := func(secrets ...string) resource.TestCheckFunc {
		return func(s *terraform.State) error {
			for _, rs := range s.RootModule().Resources {
				for k, v := range rs.Primary.Attributes {
					for _, secret := range secrets {
						if strings.Contains(v, secret) {
							return fmt.Errorf("state attribute %s of %s holds a write-only value", k, rs.Primary.ID)
						}
					}
				}
			}
			return nil
		}
	}
	nulls := []statecheck.StateCheck{
		statecheck.ExpectKnownValue(addr, tfjsonpath.New("set_wo"), knownvalue.Null()),
		statecheck.ExpectKnownValue(addr, tfjsonpath.New("repository_password_wo"), knownvalue.Null()),
	}

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_11_0)},
		CheckDestroy:             f.checkReleaseGone("openebs"),
		Steps: []resource.TestStep{
			{
				Config:            config("s3cret-repo", "wo-token-1", 1),
				ConfigStateChecks: nulls,
				Check:             resource.ComposeTestCheckFunc(released("wo-token-1"), notInState("wo-token-1", "s3cret-repo")),
			},
			{
				// A new write-only value alone: Terraform cannot see it, nothing is planned.
				Config:   config("s3cret-repo", "wo-token-2", 1),
				PlanOnly: true,
			},
			{
				Config: config("s3cret-repo", "wo-token-2", 2),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: nulls,
				Check:             resource.ComposeTestCheckFunc(released("wo-token-2"), notInState("wo-token-2", "s3cret-repo")),
			},
			{
				// The repository sees the write-only password: a wrong one is refused.
				Config:      config("wrong", "wo-token-3", 3),
				ExpectError: acctest.ErrorWords("401"),
			},
		},
	})
}
