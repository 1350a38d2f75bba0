package volumemigration_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
)

// TestAccVolumeMigration_rbac migrates a Deployment's claim, then deletes the source volume
// (delete_source, an update) and destroys the resource, with a kubeconfig bound to exactly
// examples/rbac/volume-migration.yaml's ClusterRole and its Role in the claim's namespace. Its first
// step lists the claim with clusterstorage_volumes bound to exactly examples/rbac/volumes.yaml's
// ClusterRole.
func TestAccVolumeMigration_rbac(t *testing.T) {
	f := newFixture(t)
	src := f.volume(t, acctest.RandomName("migration-src"), f.source)
	f.volume(t, acctest.RandomName("migration-dst"), f.target)
	f.claim(t, "data", src)
	f.writer(t, src)
	migration := acctest.RoleKubeconfig(t, f.client, acctest.RandomName("acc-vm-rbac"), "volume-migration.yaml", map[string]string{"default": f.ns})
	inventory := acctest.RoleKubeconfig(t, f.client, acctest.RandomName("acc-vols-rbac"), "volumes.yaml", nil)
	config := func(deleteSource bool) string {
		return acctest.WithKubeconfig(f.configDelete("data", f.target, deleteSource), migration)
	}
	name := "clusterstorage_volume_migration.test"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{
			{
				// One provider server serves every provider block of a test configuration (the
				// last configuration wins), so the inventory's role gets a step of its own.
				Config: acctest.WithKubeconfig(acctest.ProviderConfig(), inventory) + fmt.Sprintf(`
data "clusterstorage_volumes" "test" {
  namespace = %q
}
`, f.ns),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("data.clusterstorage_volumes.test", tfjsonpath.New("volumes").AtSliceIndex(0).AtMapKey("workloads").AtSliceIndex(0).AtMapKey("name"), knownvalue.StringExact("writer")),
				},
			},
			{
				Config: config(false),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(name, tfjsonpath.New("source_volume"), knownvalue.StringExact(filepath.Base(src))),
				},
			},
			{
				Config: config(true),
			},
		},
	})
}
