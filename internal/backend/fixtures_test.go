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
				v, ok := chartDefault(rel, key)
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

// chartDefault is the default of a dotted value key as an install sees it: the chart's own
// values first, then, for a key below a subchart's name, that subchart's.
func chartDefault(ch *chart.Chart, key string) (any, bool) {
	if v, ok := backend.LookupPath(ch.Values, key); ok {
		return v, true
	}
	head, rest, ok := strings.Cut(key, ".")
	if !ok {
		return nil, false
	}
	for _, sub := range ch.Dependencies() {
		if sub.Name() == head {
			return chartDefault(sub, rest)
		}
	}
	return nil, false
}
