package volumemigration_test

import (
	"path/filepath"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
)

// required names the provider's source: an import step's configuration is used as written, and
// OpenTofu would otherwise look for the provider in its own registry.
const required = `terraform {
  required_providers {
    clusterstorage = { source = "registry.terraform.io/hashicorp/clusterstorage" }
  }
}
`

// TestAccVolumeMigration_identity: a migration's resource identity is the claim it moved
// (namespace, claim), set when it is made and kept by an update; an import block with that
// identity (Terraform 1.12+, OpenTofu 1.12+) imports the finished migration, and the plan then
// updates in place only the settings an import cannot know (the copy pod's image and pull
// policy, which matter only to later runs): nothing is migrated again.
func TestAccVolumeMigration_identity(t *testing.T) {
	acctest.RunsUnder(t, acctest.EveryCLI)
	f := newFixture(t)
	src := f.volume(t, acctest.RandomName("migration-src"), f.source)
	f.volume(t, acctest.RandomName("migration-dst"), f.target)
	f.claim(t, "data", src)
	f.writer(t, src)
	name := "clusterstorage_volume_migration.test"
	identity := statecheck.ExpectIdentity(name, map[string]knownvalue.Check{
		"namespace": knownvalue.StringExact(f.ns), "claim": knownvalue.StringExact("data"),
	})
	resource.Test(t, resource.TestCase{
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_12_0)},
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:            required + f.config("data", f.target),
				ConfigStateChecks: []statecheck.StateCheck{identity},
			},
			{
				ResourceName:       name,
				ImportState:        true,
				ImportStateKind:    resource.ImportBlockWithResourceIdentity,
				ExpectNonEmptyPlan: true,
				ImportPlanChecks: resource.ImportPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(name, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(name, tfjsonpath.New("source_volume"), knownvalue.StringExact(filepath.Base(src))),
				}},
			},
			{
				Config: required + f.configDelete("data", f.target, true),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(name, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{identity},
			},
		},
	})
}
