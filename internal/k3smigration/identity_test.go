package k3smigration_test

import (
	"path/filepath"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
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

// TestAccK3sDataDirMigration_identity: a migration's resource identity is its node, source,
// target and switch method, set when it is made and kept by an update; an import block with that
// identity (Terraform 1.12+, OpenTofu 1.12+) imports it, the Read checking on the node that k3s
// runs on the target, and the plan then updates in place only the settings an import cannot know
// (never a replace, which would move the data back).
func TestAccK3sDataDirMigration_identity(t *testing.T) {
	acctest.RunsUnder(t, acctest.EveryCLI)
	s, nodeName := accStandin(t)
	target := filepath.Join(s.Root, "mnt/nvme/k3s")
	identity := statecheck.ExpectIdentity(addr, map[string]knownvalue.Check{
		"node": knownvalue.StringExact(nodeName), "source": knownvalue.StringExact(s.Source),
		"target": knownvalue.StringExact(target), "switch_method": knownvalue.StringExact("symlink"),
	})
	resource.Test(t, resource.TestCase{
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_12_0)},
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy:             checkOnSource(s),
		Steps: []resource.TestStep{
			{
				Config:            required + migrationConfig(s, nodeName, target, "  restore_on_destroy = true"),
				ConfigStateChecks: []statecheck.StateCheck{identity},
				Check:             checkLinked(s, target),
			},
			{
				ResourceName:       addr,
				ImportState:        true,
				ImportStateKind:    resource.ImportBlockWithResourceIdentity,
				ExpectNonEmptyPlan: true,
				ImportPlanChecks: resource.ImportPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
			},
			{
				// An update keeps the identity; destroy then moves the data back (CheckDestroy).
				Config: required + migrationConfig(s, nodeName, target, "  restore_on_destroy = true\n  drain = true"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{identity},
				Check:             checkLinked(s, target),
			},
		},
	})
}
