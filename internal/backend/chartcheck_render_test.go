package backend

import (
	"context"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/helm"
)

// The fixture charts (internal/acctest/testdata/charts; acctest itself cannot be imported here).
const fixtureCharts = "../acctest/testdata/charts"

// loadFixture loads a fixture chart directory served as version.
func loadFixture(t *testing.T, dir, version string) *chart.Chart {
	t.Helper()
	ch, err := loader.LoadDir(filepath.Join(fixtureCharts, dir))
	if err != nil {
		t.Fatal(err)
	}
	md := *ch.Metadata
	md.Version = version
	ch.Metadata = &md
	return ch
}

// fixtureVersions are the real releases a fixture directory stands in for.
func fixtureVersions(t *testing.T, dir string) []string {
	t.Helper()
	ch, err := loader.LoadDir(filepath.Join(fixtureCharts, dir))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(ch.Metadata.Annotations["clusterstorage.io/fixture-versions"])
}

// TestRenderEveryVerifiedVersion renders the fixture of every verified chart version (each
// recorded in realCharts from the real Chart.yaml/values.yaml) with the typed settings all on,
// all off and at their defaults, and checks what each renders: the chart check passes, every
// engine turned off has no workload and every engine on has one (checkRendered).
func TestRenderEveryVerifiedVersion(t *testing.T) {
	ctx := context.Background()
	openebs := map[string]func(*openebsSettings){
		"defaults": func(*openebsSettings) {},
		"all on": func(o *openebsSettings) {
			o.MayastorEnabled, o.LVMEnabled, o.ZFSEnabled, o.LokiEnabled = true, true, true, true
		},
		"engines on, add-ons off": func(o *openebsSettings) { o.MayastorEnabled, o.LVMEnabled, o.ZFSEnabled = true, true, true },
	}
	checked := map[string]bool{}
	for _, rc := range realCharts {
		dir := map[string]string{typeLonghorn: "longhorn", typeOpenEBS: "openebs-4.0"}[rc.chart]
		if rc.chart == typeOpenEBS && strings.HasPrefix(rc.version, "4.4.") {
			dir = "openebs-4.4"
		}
		if !contains(fixtureVersions(t, dir), rc.version) {
			t.Errorf("%s %s: no fixture serves it", rc.chart, rc.version)
			continue
		}
		ch := loadFixture(t, dir, rc.version)
		cases := map[string]spec{"defaults": {Type: rc.chart, Longhorn: defaultLonghornSettings(), OpenEBS: defaultOpenEBSSettings()}}
		if rc.chart == typeOpenEBS {
			for name, mutate := range openebs {
				s := spec{Type: typeOpenEBS, OpenEBS: defaultOpenEBSSettings()}
				mutate(&s.OpenEBS)
				if s.OpenEBS.LokiEnabled {
					s.OpenEBS.AlloyEnabled = strings.HasPrefix(rc.version, "4.4.")
				}
				cases[name] = s
			}
		}
		for name, s := range cases {
			s.ReleaseName, s.Namespace = "rel", "ns"
			values, err := s.valuesFor(rc.version)
			if err != nil {
				t.Fatalf("%s %s %s: %v", rc.chart, rc.version, name, err)
			}
			if _, _, err := checkArchive(ctx, ch, engines[rc.chart], values, "rel", "ns"); err != nil {
				t.Errorf("%s %s with %s: %v", rc.chart, rc.version, name, err)
			}
			checked[rc.chart+" "+rc.version] = true
		}
	}
	// The check's rule itself, on one render: Mayastor off leaves no Mayastor workload; on,
	// its io-engine and etcd; hostpath always renders its provisioner.
	ch := loadFixture(t, "openebs-4.4", "4.4.0")
	for _, on := range []bool{false, true} {
		s := spec{Type: typeOpenEBS, OpenEBS: defaultOpenEBSSettings()}
		s.OpenEBS.MayastorEnabled = on
		values, err := s.valuesFor("4.4.0")
		if err != nil {
			t.Fatal(err)
		}
		out, err := helm.Render(ctx, ch, values, "rel", "ns")
		if err != nil {
			t.Fatal(err)
		}
		var mayastor, hostpath []string
		for _, o := range out.Objects {
			if !isPodWorkload(o.Object) {
				continue
			}
			switch {
			case strings.HasPrefix(o.Subchart, "mayastor"):
				mayastor = append(mayastor, o.Kind+"/"+o.Name)
			case o.Subchart == "localpv-provisioner":
				hostpath = append(hostpath, o.Kind+"/"+o.Name)
			}
		}
		sort.Strings(mayastor)
		if want := "DaemonSet/rel-io-engine StatefulSet/rel-etcd"; (on && strings.Join(mayastor, " ") != want) || (!on && len(mayastor) > 0) {
			t.Errorf("mayastor_enabled = %t: Mayastor workloads %v", on, mayastor)
		}
		if len(hostpath) != 1 {
			t.Errorf("mayastor_enabled = %t: hostpath provisioner workloads %v, want one", on, hostpath)
		}
	}
	if len(checked) != len(realCharts) {
		t.Errorf("checked %d chart versions, want %d", len(checked), len(realCharts))
	}
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// openebs43 is the 4.4 fixture laid out as OpenEBS 4.3.x is (openebsDeps43): no rawfile
// LocalPV, served as 4.3.2.
func openebs43(t *testing.T) *chart.Chart {
	t.Helper()
	ch := loadFixture(t, "openebs-4.4", "4.3.2")
	md := *ch.Metadata
	md.Dependencies = nil
	for _, d := range ch.Metadata.Dependencies {
		if d.Name != "rawfile-localpv" {
			md.Dependencies = append(md.Dependencies, d)
		}
	}
	ch.Metadata = &md
	var subs []*chart.Chart
	for _, sub := range ch.Dependencies() {
		if sub.Name() != "rawfile-localpv" {
			subs = append(subs, sub)
		}
	}
	ch.SetDependencies(subs...)
	return ch
}

// TestOpenEBS43Layout: a 4.3 chart (Loki and Alloy as the umbrella's subcharts, on by default,
// as OpenEBS's 4.3.x documentation shows) is installed with its own layout and passes the
// chart check, loki_enabled and alloy_enabled carried by `loki.enabled` and `alloy.enabled`.
// Under the old mapping (4.2's layout: Mayastor's loki-stack) the same archive is refused.
func TestOpenEBS43Layout(t *testing.T) {
	ctx := context.Background()
	e := engines[typeOpenEBS]
	r, verified, err := e.layoutFor("4.3.2")
	if err != nil || verified || r.Minor != "4.3" {
		t.Fatalf("4.3.2: layout %q verified %t (%v), want 4.3's, unverified", r.Minor, verified, err)
	}
	ch := openebs43(t)
	s := spec{Type: typeOpenEBS, OpenEBS: defaultOpenEBSSettings()}
	values, err := s.valuesFor("4.3.2")
	if err != nil {
		t.Fatal(err)
	}
	if lookupBool(values, "loki.enabled", true) || lookupBool(values, "alloy.enabled", true) {
		t.Errorf("4.3.2 with Loki and Alloy off writes %v", values)
	}
	if _, _, err := checkArchive(ctx, ch, e, values, "rel", "ns"); err != nil {
		t.Errorf("4.3.2 with its own layout: %v", err)
	}
	// The old mapping: 4.3 installed with 4.2's layout.
	old := e.Ranges[2]
	if old.Minor != "4.2" {
		t.Fatalf("range 2 is %s", old.Minor)
	}
	oldValues, err := typedValues(e, old, "4.3.2", "openebs", s.OpenEBS.value)
	if err != nil {
		t.Fatal(err)
	}
	if problems := verifyChart(ch, old); len(problems) == 0 {
		t.Error("4.3.2 under 4.2's layout passes the layout check")
	}
	problems, err := checkRendered(ctx, ch, old, mustMerge(t, oldValues), "rel", "ns")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(problems, "\n")
	for _, want := range []string{"subchart alloy is on (`alloy.enabled` is true)", "subchart loki is on (`loki.enabled` is true)", "set `loki.enabled: false` in values"} {
		if !strings.Contains(text, want) {
			t.Errorf("4.3.2 under 4.2's layout: problems\n%s\nwant %q", text, want)
		}
	}
}

// TestRenderCheckRefuses: archives whose keys and conditions are all there (verifyChart passes)
// but which do not render what the values ask for are refused, naming the part and what to set.
func TestRenderCheckRefuses(t *testing.T) {
	ctx := context.Background()
	e := engines[typeOpenEBS]
	r, _, err := e.layoutFor("4.4.0")
	if err != nil {
		t.Fatal(err)
	}
	on := spec{Type: typeOpenEBS, OpenEBS: defaultOpenEBSSettings()}
	on.OpenEBS.LVMEnabled = true
	values, err := on.valuesFor("4.4.0")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		mutate func(*chart.Chart)
		want   string
	}{
		{
			// engines.local.lvm.enabled exists and is the subchart's condition, but the LVM
			// plugin now waits for a key of its own that the layout never sets.
			name: "an engine on renders no plugin",
			mutate: func(ch *chart.Chart) {
				sub := subchart(t, ch, "lvm-localpv")
				for _, f := range sub.Templates {
					f.Data = []byte("{{- if .Values.lvmNode.enabled }}\n" + string(f.Data) + "\n{{- end }}\n")
				}
				sub.Values["lvmNode"] = map[string]any{"enabled": false}
			},
			want: "LocalPV LVM (subchart lvm-localpv) is turned on (`engines.local.lvm.enabled` = true) but the chart renders no Deployment, DaemonSet or StatefulSet of it",
		},
		{
			name: "a new subchart on by default",
			mutate: func(ch *chart.Chart) {
				extra := &chart.Chart{Metadata: &chart.Metadata{APIVersion: "v2", Name: "minio", Version: "1.0.0"},
					Values:    map[string]any{},
					Templates: []*common.File{{Name: "templates/sts.yaml", Data: []byte("apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: {{ .Release.Name }}-minio\n")}}}
				ch.AddDependency(extra)
				ch.Metadata.Dependencies = append(ch.Metadata.Dependencies, &chart.Dependency{Name: "minio", Version: "1.0.0", Condition: "minio.enabled"})
				ch.Values["minio"] = map[string]any{"enabled": true}
			},
			want: "subchart minio is on (`minio.enabled` is true) and is not a part the provider knows for this layout: set `minio.enabled: false` in values to leave it out",
		},
		{
			name: "a CSI driver of another name",
			mutate: func(ch *chart.Chart) {
				sub := subchart(t, ch, "lvm-localpv")
				sub.Templates = append(sub.Templates, &common.File{Name: "templates/csidriver.yaml",
					Data: []byte("apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata:\n  name: lvm.csi.example.com\n")})
			},
			want: "LocalPV LVM (subchart lvm-localpv) renders the CSI driver lvm.csi.example.com, not local.csi.openebs.io",
		},
	} {
		ch := loadFixture(t, "openebs-4.4", "4.4.0")
		tc.mutate(ch)
		if problems := verifyChart(ch, r); len(problems) > 0 {
			t.Fatalf("%s: the layout check already refuses it: %v", tc.name, problems)
		}
		problems, err := checkRendered(ctx, ch, r, values, "rel", "ns")
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		text := strings.Join(problems, "\n")
		if !strings.Contains(text, tc.want) {
			t.Errorf("%s: problems\n%s\nwant %q", tc.name, text, tc.want)
		}
	}
}

func subchart(t *testing.T, ch *chart.Chart, name string) *chart.Chart {
	t.Helper()
	for _, sub := range ch.Dependencies() {
		if sub.Name() == name {
			return sub
		}
	}
	t.Fatalf("no subchart %s", name)
	return nil
}

func mustMerge(t *testing.T, typed map[string]any) map[string]any {
	t.Helper()
	v, err := helm.MergeValues(typed, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
