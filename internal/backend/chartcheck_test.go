package backend_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/helm"
)

// TestAccStorageBackend_unverifiedVersion: an OpenEBS chart newer than the verified table is
// installed when its archive has the value layout of the newest verified minor (4.9.0, a copy of
// the 4.4 fixture), and a chart whose Mayastor toggle moved (4.9.1, fixtureCopy) is
// refused at apply before Helm is called: on install nothing is installed; on upgrade the release
// stays at its revision and the state at 4.9.0.
func TestAccStorageBackend_unverifiedVersion(t *testing.T) {
	f := newFixture(t)
	settings := fmt.Sprintf("    hostpath_class_name = %q", acctest.RandomName("acc-hostpath"))
	later := strings.Replace(f.openebs("4.9.0", settings, ""), f.repo, acctest.StartChartRepo(t, fixtureCopy(t, "4.9.0", false)), 1)
	moved := strings.Replace(f.openebs("4.9.1", settings, ""), f.repo, acctest.StartChartRepo(t, fixtureCopy(t, "4.9.1", true)), 1)
	refusal := acctest.ErrorWords("subchart mayastor has the condition `mayastor.enabled`, the layout `engines.replicated.mayastor.enabled`")
	at := func(revision int) func() {
		return func() {
			st, err := f.release()
			switch {
			case revision == 0 && !errors.Is(err, helm.ErrNotFound):
				t.Fatalf("after the refused install: release %+v (%v), want none", st, err)
			case revision > 0 && (err != nil || st.Revision != revision || st.ChartVersion != "4.9.0"):
				t.Fatalf("after the refused upgrade: release %+v (%v), want 4.9.0 at revision %d", st, err, revision)
			}
		}
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy:             f.checkReleaseGone("openebs"),
		Steps: []resource.TestStep{
			{Config: moved, ExpectError: refusal},
			{
				PreConfig: at(0),
				Config:    later,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("chart_version"), knownvalue.StringExact("4.9.0")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("revision"), knownvalue.Int64Exact(1)),
				},
			},
			{Config: moved, ExpectError: refusal},
			{PreConfig: at(1), Config: later, PlanOnly: true},
		},
	})
}
