package provider_test

import (
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
)

// TestAccProvider_sshUnknownAtPlan: ssh settings and nodes built from values computed during
// apply (a for over a cluster module's nodes) do not fail the provider's configuration with a
// value conversion error; what must reach a node before they are known says so.
func TestAccProvider_sshUnknownAtPlan(t *testing.T) {
	acctest.RunsUnder(t, acctest.EveryCLI, acctest.OldestTerraform)
	acctest.Kube(t)
	cases := map[string]string{
		"nodes": `ssh {
    user = "root"
  }
  nodes = { for h in toset([terraform_data.host.output]) : h => { host = h } }`,
		"ssh": `ssh {
    user        = "root"
    private_key = terraform_data.host.output
  }`,
	}
	for name, ssh := range cases {
		t.Run(name, func(t *testing.T) {
			config := fmt.Sprintf(`
resource "terraform_data" "host" {
  input = "127.0.0.1"
}
provider "clusterstorage" {
  kubernetes {
    config_path = %q
  }
  %s
}`, acctest.Kubeconfig(), ssh)
			resource.ParallelTest(t, resource.TestCase{
				PreCheck:                 func() { acctest.PreCheck(t) },
				ProtoV6ProviderFactories: acctest.ProviderFactories,
				Steps: []resource.TestStep{
					{Config: config + class(acctest.RandomName("acc-provider")), PlanOnly: true, ExpectNonEmptyPlan: true},
					{
						Config:      config + "\ndata \"clusterstorage_storage_capacity\" \"test\" {\n  node_path = \"/\"\n}\n",
						PlanOnly:    true,
						ExpectError: acctest.ErrorWords("cannot be reached yet: the provider's " + name + " depend on values computed during apply"),
					},
				},
			})
		})
	}
}
