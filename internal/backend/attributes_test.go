package backend_test

import (
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
)

// TestAccStorageBackend_helmReleaseAttributes covers what helm_release users reach for: a
// repository that wants a TLS client certificate (repository_cert_file/key_file), reached with
// repository_insecure_skip_verify instead of its CA; values as YAML documents merged in order;
// set_sensitive, sensitive in plan and state and reaching the chart; max_history bounding the
// revisions kept.
func TestAccStorageBackend_helmReleaseAttributes(t *testing.T) {
	g := newGuard(t)
	repo := acctest.StartChartRepoWith(t, guardChartsDir(), acctest.ChartRepoOptions{TLS: true, ClientCert: true})
	const secret = "s3cr3t-token-value"
	config := func(cpu, insecure, sensitive string) string {
		return acctest.ProviderConfig() + fmt.Sprintf(`
resource "clusterstorage_storage_backend" "test" {
  type                            = "longhorn"
  repository                      = %q
  repository_cert_file            = %q
  repository_key_file             = %q
  repository_insecure_skip_verify = %s
  version                         = "1.8.1"
  namespace                       = %q
  max_history                     = 2
  longhorn = {
    default_replica_count = 1
    default_class         = false
  }
  values = [
    yamlencode({ longhornManager = { resources = { requests = { cpu = "10m", memory = "20Mi" } } } }),
    "",
    yamlencode({ longhornManager = { resources = { requests = { cpu = %q } } } }),
  ]
  set = [
    { name = "fixture.className", value = %q },
    { name = "fixture.apiServer", value = %q },
  ]
  set_sensitive = [%s]
}
`, repo.URL, repo.CertFile, repo.KeyFile, insecure, g.ns, cpu, g.class, g.api, sensitive)
	}
	token := fmt.Sprintf(`{ name = "fixture.token", value = %q }`, secret)
	// longhorn-manager is the fixture's only workload: a DaemonSet, one pod per node.
	nodes := g.nodeCount()
	footprint := func(cpu int64) []statecheck.StateCheck {
		return []statecheck.StateCheck{
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("footprint").AtMapKey("cpu_requests_millicores"), knownvalue.Int64Exact(cpu*nodes)),
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("footprint").AtMapKey("memory_requests_bytes"), knownvalue.Int64Exact(20<<20*nodes)),
			statecheck.ExpectSensitiveValue(addr, tfjsonpath.New("set_sensitive").AtSliceIndex(0).AtMapKey("value")),
		}
	}
	history := func(n int) func(*terraform.State) error {
		return func(*terraform.State) error {
			revs, err := g.helm.History("longhorn", g.ns)
			if err != nil {
				return err
			}
			if len(revs) != n {
				return fmt.Errorf("release has %d revisions, want %d (max_history)", len(revs), n)
			}
			return nil
		}
	}

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy:             g.checkReleaseGone("longhorn"),
		Steps: []resource.TestStep{
			{
				Config: config("30m", "true", token),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectSensitiveValue(addr, tfjsonpath.New("set_sensitive").AtSliceIndex(0).AtMapKey("value")),
				}},
				ConfigStateChecks: footprint(30),
				Check: resource.ComposeTestCheckFunc(g.checkFootprint(), history(1), func(*terraform.State) error {
					st, err := g.helm.Get("longhorn", g.ns)
					if err != nil {
						return err
					}
					if fixture, _ := st.Values["fixture"].(map[string]any); fixture["token"] != secret {
						return fmt.Errorf("set_sensitive did not reach the chart: fixture values %v", st.Values["fixture"])
					}
					return nil
				}),
			},
			{Config: config("31m", "true", token), ConfigStateChecks: footprint(31), Check: history(2)},
			{Config: config("32m", "true", token), ConfigStateChecks: footprint(32), Check: history(2)},
			{
				// A sensitive value that contradicts a typed setting: the error names the entry,
				// never the value.
				Config:      config("32m", "true", `{ name = "persistence.defaultClassReplicaCount", value = "7" }`),
				ExpectError: acctest.ErrorWords("set_sensitive[persistence.defaultClassReplicaCount] sets persistence.defaultClassReplicaCount to (sensitive value)"),
			},
			{
				// Without insecure_skip_verify (and without the CA), the repository's certificate is refused.
				Config:      config("33m", "false", token),
				ExpectError: acctest.ErrorWords("certificate signed by unknown authority"),
			},
		},
	})
}
