package backend_test

import (
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
)

// TestAccStorageBackend_identity: a backend's resource identity is its release (namespace,
// release_name), set at create and kept by an update; an import block with that identity
// (Terraform 1.12+, OpenTofu 1.12+) imports the release with no change, and an import block with
// `<namespace>/<release_name>` as `id` still does. The import steps' configuration is what an
// import reads back (the chart's default repository: a release does not record where its chart
// came from).
func TestAccStorageBackend_identity(t *testing.T) {
	acctest.RunsUnder(t, acctest.EveryCLI)
	f := newFixture(t)
	class := acctest.RandomName("acc-hostpath")
	base := t.TempDir()
	config := func(repository, extra string) string {
		return `terraform {
  required_providers {
    clusterstorage = { source = "registry.terraform.io/hashicorp/clusterstorage" }
  }
}
` + acctest.ProviderConfig() + fmt.Sprintf(`
resource "clusterstorage_storage_backend" "test" {
  type      = "openebs"
  %s
  version   = "4.0.1"
  namespace = %q
  openebs = {
    hostpath_class_name  = %q
    hostpath_base_path   = %q
    volume_snapshot_crds = false
  }
  %s
}
`, repository, f.ns, class, base, extra)
	}
	repo := fmt.Sprintf("repository = %q", f.repo)
	identity := statecheck.ExpectIdentity(addr, map[string]knownvalue.Check{
		"namespace": knownvalue.StringExact(f.ns), "release_name": knownvalue.StringExact("openebs"),
	})
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_12_0)},
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy:             f.checkReleaseGone("openebs"),
		Steps: []resource.TestStep{
			{
				Config: config(repo, ""),
				ConfigStateChecks: []statecheck.StateCheck{
					identity,
					statecheck.ExpectIdentityValueMatchesState(addr, tfjsonpath.New("namespace")),
					statecheck.ExpectIdentityValueMatchesState(addr, tfjsonpath.New("release_name")),
				},
			},
			{
				Config: config(repo, "max_history = 5"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{identity},
			},
			{
				Config:          config("", "max_history = 10"),
				ResourceName:    addr,
				ImportState:     true,
				ImportStateKind: resource.ImportBlockWithResourceIdentity,
			},
			{
				Config:          config("", "max_history = 10"),
				ResourceName:    addr,
				ImportState:     true,
				ImportStateKind: resource.ImportBlockWithID,
			},
		},
	})
}
