package backend_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/helm"
)

// TestAccStorageBackend_unverifiedVersion: an OpenEBS chart newer than the verified table is
// installed when its archive has the value layout of the newest verified minor (4.9.0, a copy of
// the 4.4 fixture), and a chart whose Mayastor toggle moved (4.9.1, fixtureCopy) is
// refused at plan before Helm is called: on install nothing is installed; on upgrade the release
// stays at its revision and the state at 4.9.0. A copy with a new subchart on by default (4.9.2,
// fixtureWithAddOn) is refused at plan, naming it and the value that turns it off.
func TestAccStorageBackend_unverifiedVersion(t *testing.T) {
	acctest.RunsUnder(t, acctest.FirstCLIOnly)
	f := newFixture(t)
	settings := fmt.Sprintf("    hostpath_class_name = %q", acctest.RandomName("acc-hostpath"))
	later := strings.Replace(f.openebs("4.9.0", settings, ""), f.repo, acctest.StartChartRepo(t, fixtureCopy(t, "4.9.0", false)), 1)
	moved := strings.Replace(f.openebs("4.9.1", settings, ""), f.repo, acctest.StartChartRepo(t, fixtureCopy(t, "4.9.1", true)), 1)
	refusal := acctest.ErrorWords("subchart mayastor has the condition `mayastor.enabled`, the layout `engines.replicated.mayastor.enabled`")
	// A later chart with a new add-on on by default: refused at plan (PlanOnly), by name.
	extra := strings.Replace(f.openebs("4.9.2", settings, ""), f.repo, acctest.StartChartRepo(t, fixtureWithAddOn(t, "4.9.2")), 1)
	addOn := acctest.ErrorWords("subchart minio is on (`minio.enabled` is true) and is not a part the provider knows for this layout: set `minio.enabled: false` in values")
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
			{Config: extra, PlanOnly: true, ExpectError: addOn},
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

// fixtureWithAddOn writes, into a new directory of charts it returns, the OpenEBS 4.4 fixture as
// one release, version, with one more subchart, minio, on by default (`minio.enabled`) and
// rendering a StatefulSet: an add-on a later chart brings that the provider's table does not know.
func fixtureWithAddOn(t *testing.T, version string) string {
	t.Helper()
	ch, err := loader.LoadDir(filepath.Join(acctest.ChartsDir(), "openebs-4.4"))
	if err != nil {
		t.Fatal(err)
	}
	md := *ch.Metadata
	md.Version, md.AppVersion = version, version
	md.Annotations = map[string]string{acctest.AnnotationFixtureVersions: version}
	md.Dependencies = append(append([]*chart.Dependency(nil), ch.Metadata.Dependencies...),
		&chart.Dependency{Name: "minio", Version: "1.0.0", Condition: "minio.enabled"})
	ch.Metadata = &md
	ch.Values["minio"] = map[string]any{"enabled": true}
	ch.AddDependency(&chart.Chart{
		Metadata: &chart.Metadata{APIVersion: "v2", Name: "minio", Version: "1.0.0"},
		Values:   map[string]any{},
		Templates: []*common.File{{Name: "templates/statefulset.yaml", Data: []byte("apiVersion: apps/v1\nkind: StatefulSet\n" +
			"metadata:\n  name: {{ .Release.Name }}-minio\nspec:\n  replicas: 0\n  selector: {matchLabels: {app: minio}}\n" +
			"  template:\n    metadata: {labels: {app: minio}}\n    spec: {containers: [{name: minio, image: localhost/clusterstorage/busybox:1}]}\n")}},
	})
	dir := t.TempDir()
	if err := chartutil.SaveDir(ch, dir); err != nil {
		t.Fatal(err)
	}
	return dir
}
