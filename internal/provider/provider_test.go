package provider_test

import (
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
)

func class(name string) string {
	return fmt.Sprintf(`
resource "clusterstorage_storage_class" "test" {
  name                = %q
  storage_provisioner = "kubernetes.io/no-provisioner"
}`, name)
}

// TestAccProvider_configUnknownAtPlan: a kubeconfig path computed during apply (as for a cluster
// created in the same apply) does not fail the plan, and the apply then uses it.
func TestAccProvider_configUnknownAtPlan(t *testing.T) {
	acctest.RunsUnder(t, acctest.EveryCLI, acctest.OldestTerraform)
	acctest.Kube(t)
	name := acctest.RandomName("acc-provider")
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{{
			Config: fmt.Sprintf(`
resource "terraform_data" "cluster" {
  input = %q
}
provider "clusterstorage" {
  kubernetes {
    config_path = terraform_data.cluster.output
  }
}`, acctest.Kubeconfig()) + class(name),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("clusterstorage_storage_class.test", tfjsonpath.New("id"), knownvalue.StringExact(name)),
			},
		}},
	})
}

// TestAccProvider_configFromEnvironment: KUBE_CONFIG_PATH works as in the hashicorp providers.
func TestAccProvider_configFromEnvironment(t *testing.T) {
	acctest.RunsUnder(t, acctest.EveryCLI, acctest.OldestTerraform)
	acctest.Kube(t)
	t.Setenv("KUBE_CONFIG_PATH", acctest.Kubeconfig())
	name := acctest.RandomName("acc-provider")
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{{
			Config: `provider "clusterstorage" {}` + class(name),
		}},
	})
}

// TestAccProvider_configErrors: a missing or unusable configuration is one clear error.
func TestAccProvider_configErrors(t *testing.T) {
	acctest.RunsUnder(t, acctest.EveryCLI, acctest.OldestTerraform)
	acctest.Kube(t)
	for _, v := range []string{"KUBE_CONFIG_PATH", "KUBE_CONFIG_PATHS", "KUBE_HOST"} {
		t.Setenv(v, "")
	}
	cases := map[string]struct{ provider, want string }{
		"nothing configured": {`provider "clusterstorage" {}`, "no Kubernetes configuration: set kubernetes.config_path"},
		"missing kubeconfig": {`provider "clusterstorage" {
  kubernetes {
    config_path = "/nonexistent/kubeconfig"
  }
}`, "kubeconfig file not found: /nonexistent/kubeconfig"},
		"unknown context": {fmt.Sprintf(`provider "clusterstorage" {
  kubernetes {
    config_path    = %q
    config_context = "no-such-context"
  }
}`, acctest.Kubeconfig()), `context "no-such-context" does not exist`},
		"exec without command": {`provider "clusterstorage" {
  kubernetes {
    host = "https://127.0.0.1:6443"
    exec {
      api_version = "client.authentication.k8s.io/v1"
    }
  }
}`, "needs a command"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: acctest.ProviderFactories,
				Steps: []resource.TestStep{{
					Config:      tc.provider + class("never-created"),
					ExpectError: acctest.ErrorWords(tc.want),
				}},
			})
		})
	}
}
