package backend_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/backend"
)

// TestFixturesMatchTable checks every fixture chart release (acctest's testdata/charts, one
// directory per version range, packaged once per version) against engines.go's table: the same
// dependencies and conditions (the subchart's own where the table has them), every key of the
// table present with the table's default, the table's kubeVersion, and a fixture release for the
// newest patch of every range. A fixture that drifts from the table (and so from the real
// charts, which TestTableMatchesRealCharts checks the table against) fails here.
func TestFixturesMatchTable(t *testing.T) {
	dirs, err := os.ReadDir(acctest.ChartsDir())
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		ch, err := loader.LoadDir(filepath.Join(acctest.ChartsDir(), d.Name()))
		if err != nil {
			t.Fatalf("%s: %v", d.Name(), err)
		}
		for _, rel := range acctest.FixtureReleases(ch) {
			name := d.Name() + " as " + rel.Metadata.Version
			served[ch.Name()+" "+rel.Metadata.Version] = true
			r, err := backend.TableRangeFor(ch.Name(), rel.Metadata.Version)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			if rel.Metadata.KubeVersion != r.KubeVersion {
				t.Errorf("%s: kubeVersion %q, table %q", name, rel.Metadata.KubeVersion, r.KubeVersion)
			}
			if got := fixtureDependencies(rel, r); !reflect.DeepEqual(got, r.Dependencies) {
				t.Errorf("%s: dependencies %v, table %v", name, got, r.Dependencies)
			}
			for key, def := range r.Defaults {
				v, ok := backend.ChartValue(rel, key)
				if !ok {
					t.Errorf("%s: no value %s", name, key)
					continue
				}
				if fmt.Sprint(v) != fmt.Sprint(def) || (v == nil) != (def == nil) {
					t.Errorf("%s: %s defaults to %v, table %v", name, key, v, def)
				}
			}
		}
	}
	for name, newest := range backend.TableNewest() {
		for _, v := range newest {
			if !served[name+" "+v] {
				t.Errorf("no fixture release for %s %s, the newest patch of its range", name, v)
			}
		}
	}
}

// fixtureDependencies are the fixture's Chart.yaml dependencies, with those of each subchart
// the table lists a dependency of.
func fixtureDependencies(ch *chart.Chart, r backend.TableRange) map[string]string {
	out := map[string]string{}
	nested := map[string]bool{}
	for path := range r.Dependencies {
		if parent, _, ok := strings.Cut(path, "/"); ok {
			nested[parent] = true
		}
	}
	for _, d := range ch.Metadata.Dependencies {
		out[d.Name] = d.Condition
	}
	for _, sub := range ch.Dependencies() {
		if !nested[sub.Name()] {
			continue
		}
		for _, d := range sub.Metadata.Dependencies {
			out[sub.Name()+"/"+d.Name] = d.Condition
		}
	}
	return out
}

// TestVerifyChart: every fixture release has the value layout its version is installed with
// (the acceptance fixtures and the backend's own), and a chart whose Mayastor toggle moved, or
// that lost a value key, is refused with each difference named.
func TestVerifyChart(t *testing.T) {
	for _, dir := range []string{acctest.ChartsDir(), filepath.Join("testdata", "charts")} {
		for _, ch := range loadFixtureReleases(t, dir) {
			_, _, problems, err := backend.VerifyChart(ch.Name(), ch)
			if err != nil || len(problems) > 0 {
				t.Errorf("%s %s: %v %v", ch.Name(), ch.Metadata.Version, err, problems)
			}
		}
	}

	moved, err := loader.LoadDir(filepath.Join(fixtureCopy(t, "4.9.1", true), "openebs"))
	if err != nil {
		t.Fatal(err)
	}
	minor, verified, problems, err := backend.VerifyChart("openebs", moved)
	want := []string{"subchart mayastor has the condition `mayastor.enabled`, the layout `engines.replicated.mayastor.enabled`"}
	if err != nil || minor != "4.4" || verified || !reflect.DeepEqual(problems, want) {
		t.Errorf("moved toggle: layout %s verified %t problems %q (%v), want 4.4, false, %q", minor, verified, problems, err, want)
	}

	lost, err := loader.LoadDir(filepath.Join(acctest.ChartsDir(), "openebs-4.4"))
	if err != nil {
		t.Fatal(err)
	}
	engines, _ := lost.Values["engines"].(map[string]any)
	local, ok := engines["local"].(map[string]any)
	if !ok {
		t.Fatalf("the 4.4 fixture has no engines.local: %v", lost.Values["engines"])
	}
	delete(local, "lvm")
	_, _, problems, _ = backend.VerifyChart("openebs", lost)
	if want := []string{"no value engines.local.lvm.enabled in values.yaml"}; !reflect.DeepEqual(problems, want) {
		t.Errorf("lost key: problems %q, want %q", problems, want)
	}
}

// loadFixtureReleases loads every chart directory under dir, once per release it serves.
func loadFixtureReleases(t *testing.T, dir string) []*chart.Chart {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []*chart.Chart
	for _, d := range entries {
		if !d.IsDir() {
			continue
		}
		ch, err := loader.LoadDir(filepath.Join(dir, d.Name()))
		if err != nil {
			t.Fatalf("%s: %v", d.Name(), err)
		}
		out = append(out, acctest.FixtureReleases(ch)...)
	}
	return out
}

// fixtureCopy writes, into a new directory of charts it returns, the OpenEBS 4.4 fixture as one
// release, version (a version beyond the table), with its Mayastor toggle moved when moved is set
// (the dependency's condition is then `mayastor.enabled`: a future chart that changed a key the
// provider writes).
func fixtureCopy(t *testing.T, version string, moved bool) string {
	t.Helper()
	ch, err := loader.LoadDir(filepath.Join(acctest.ChartsDir(), "openebs-4.4"))
	if err != nil {
		t.Fatal(err)
	}
	md := *ch.Metadata
	md.Version, md.AppVersion = version, version
	md.Annotations = map[string]string{acctest.AnnotationFixtureVersions: version}
	md.Dependencies = nil
	for _, d := range ch.Metadata.Dependencies {
		d := *d
		if moved && d.Name == "mayastor" {
			d.Condition = "mayastor.enabled"
		}
		md.Dependencies = append(md.Dependencies, &d)
	}
	ch.Metadata = &md
	dir := t.TempDir()
	if err := chartutil.SaveDir(ch, dir); err != nil {
		t.Fatal(err)
	}
	return dir
}
