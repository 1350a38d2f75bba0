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
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/helm"
)

// TestAccStorageBackend_helm3Release: a release installed with the Helm 3 CLI, as users of the
// seed article did, is imported, upgraded through the resource (Helm 4: the release was applied
// client-side, so the upgrade stays client-side and meets no field-manager conflict), a failed
// upgrade of it is rolled back, and destroy uninstalls it.
func TestAccStorageBackend_helm3Release(t *testing.T) {
	t.Parallel() // as the other Longhorn guard-fixture tests: mostly waits
	g := newGuard(t)
	install := helmCommand(t, "helm3", "install", "longhorn", "longhorn", "--repo", g.repo, "--version", "1.8.1",
		"--namespace", g.ns, "--create-namespace", "--wait", "--timeout", "5m",
		"--set", "fixture.className="+g.class, "--set", "persistence.defaultClass=false")
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("helm3 install: %v\n%s", err, out)
	}
	before, err := g.helm.Get("longhorn", g.ns)
	if err != nil || before.Revision != 1 || before.Status != "deployed" {
		t.Fatalf("after helm3 install: %+v %v", before, err)
	}
	config := g.longhorn(true, "", "")
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy:             g.checkReleaseGone("longhorn"),
		Steps: []resource.TestStep{
			{
				Config:             config,
				ResourceName:       addr,
				ImportState:        true,
				ImportStateId:      g.ns + "/longhorn",
				ImportStatePersist: true,
				ImportStateCheck: func(states []*terraform.InstanceState) error {
					if len(states) != 1 || states[0].Attributes["revision"] != "1" || states[0].Attributes["chart_version"] != "1.8.1" {
						return fmt.Errorf("imported: %v", states)
					}
					return nil
				},
			},
			{
				// The configuration's values differ from what helm3 was given: an upgrade.
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("status"), knownvalue.StringExact("deployed")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("revision"), knownvalue.Int64Exact(2)),
				},
				Check: g.checkApplyMethod(2, "csa"),
			},
			{
				// A pre-upgrade hook that fails: the upgrade is rolled back to revision 2.
				Config:      g.longhorn(false, "", "  timeouts = { update = \"2m\" }"),
				ExpectError: acctest.ErrorWords("upgrading release " + g.ns + "/longhorn"),
			},
			{
				PreConfig: func() {
					st, err := g.helm.Get("longhorn", g.ns)
					if err != nil || st.Status != "deployed" || st.Revision != 4 || st.Values["fixture"].(map[string]any)["failPreUpgrade"] != false {
						t.Fatalf("after the failed upgrade: revision %d %s %v (want revision 4, the rollback to 2) %v", st.Revision, st.Status, st.Values, err)
					}
				},
				Config:   config,
				PlanOnly: true,
			},
		},
	})
}

// checkApplyMethod checks how Helm applied revision of the guard's Longhorn release ("csa":
// client-side, as Helm 3 did; "ssa": server-side).
func (g *guard) checkApplyMethod(revision int, want string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		cfg := g.actionConfig()
		r, err := helm.AsRelease(cfg.Releases.Get("longhorn", revision))
		if err != nil {
			return err
		}
		got := r.ApplyMethod
		if got == "" {
			got = "csa" // Helm 3 records none: client-side
		}
		if got != want {
			return fmt.Errorf("revision %d was applied %s, want %s", revision, got, want)
		}
		return nil
	}
}
