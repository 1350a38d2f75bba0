package backend

import (
	"slices"
	"strings"
	"testing"
)

// TestStrandedBy: which changes from the installed release to the planned one strand which
// drivers' volumes, from the typed settings (as the plan maps them) and raw values.
func TestStrandedBy(t *testing.T) {
	openebs := func(version string, mutate func(*openebsSettings)) map[string]any {
		t.Helper()
		s := spec{Type: typeOpenEBS, OpenEBS: defaultOpenEBSSettings()}
		if mutate != nil {
			mutate(&s.OpenEBS)
		}
		v, err := s.valuesFor(version)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	longhorn := func(dataPath string) map[string]any {
		t.Helper()
		s := spec{Type: typeLonghorn, Longhorn: defaultLonghornSettings()}
		if dataPath != "" {
			s.Longhorn.DefaultDataPath = dataPath
		}
		v, err := s.valuesFor("1.8.1")
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	allOn := func(o *openebsSettings) { o.MayastorEnabled, o.LVMEnabled, o.ZFSEnabled = true, true, true }
	rawfileOn := map[string]any{"engines": map[string]any{"local": map[string]any{"rawfile": map[string]any{"enabled": true}}}}

	// An archive whose values.yaml turns Mayastor off by default (and the other engines on).
	mayastorOffByDefault := map[string]any{"engines": map[string]any{
		"replicated": map[string]any{"mayastor": map[string]any{"enabled": false}},
		"local":      map[string]any{"lvm": map[string]any{"enabled": true}, "zfs": map[string]any{"enabled": true}},
	}}
	allOnByDefault := map[string]any{"engines": map[string]any{
		"replicated": map[string]any{"mayastor": map[string]any{"enabled": true}},
		"local":      map[string]any{"lvm": map[string]any{"enabled": true}, "zfs": map[string]any{"enabled": true}},
	}}
	v2 := func(on any) map[string]any {
		return map[string]any{"defaultSettings": map[string]any{"v2DataEngine": on}}
	}
	longhornChart := map[string]any{"defaultSettings": map[string]any{"v2DataEngine": nil}} // the real charts' ~

	for _, tc := range []struct {
		name        string
		typ         string
		fromVersion string
		fromChart   map[string]any // the installed chart's values; nil: the table's defaults
		from        map[string]any
		toVersion   string
		toChart     map[string]any // the archive's values; nil: the table's defaults
		to          map[string]any
		want        []string // driver[@class]: why (substring)
	}{
		{name: "nothing changes", typ: typeOpenEBS, fromVersion: "4.4.0", from: openebs("4.4.0", allOn), toVersion: "4.4.0", to: openebs("4.4.0", allOn)},
		{name: "engines turned on strand nothing", typ: typeOpenEBS, fromVersion: "4.4.0", from: openebs("4.4.0", nil), toVersion: "4.4.0", to: openebs("4.4.0", allOn)},
		{
			// A release installed with the chart's defaults (no values: every engine on), as
			// `helm install` leaves it, then the provider's defaults (every engine off).
			name: "chart defaults to provider defaults", typ: typeOpenEBS, fromVersion: "4.4.0", from: map[string]any{}, toVersion: "4.4.0", to: openebs("4.4.0", nil),
			want: []string{
				"zfs.csi.openebs.io: zfs_enabled (engines.local.zfs.enabled) turns from true to false",
				"local.csi.openebs.io: lvm_enabled (engines.local.lvm.enabled) turns from true to false",
				"io.openebs.csi-mayastor: mayastor_enabled (engines.replicated.mayastor.enabled) turns from true to false",
			},
		},
		{
			name: "one engine off", typ: typeOpenEBS, fromVersion: "4.0.1", from: openebs("4.0.1", allOn), toVersion: "4.0.1",
			to:   openebs("4.0.1", func(o *openebsSettings) { allOn(o); o.LVMEnabled = false }),
			want: []string{"local.csi.openebs.io: lvm_enabled (engines.local.lvm.enabled) turns from true to false"},
		},
		{
			name: "engine off across an upgrade", typ: typeOpenEBS, fromVersion: "4.0.1", from: openebs("4.0.1", allOn), toVersion: "4.4.0",
			to:   openebs("4.4.0", func(o *openebsSettings) { allOn(o); o.MayastorEnabled = false }),
			want: []string{"io.openebs.csi-mayastor: mayastor_enabled"},
		},
		{
			name: "raw toggle without a typed setting", typ: typeOpenEBS, fromVersion: "4.4.0", from: rawfileOn, toVersion: "4.4.0", to: map[string]any{},
			// The other engines are on by the chart's defaults on both sides: not stranded.
			want: []string{"rawfile.csi.openebs.io: engines.local.rawfile.enabled turns from true to false"},
		},
		{
			name: "a version without the engine", typ: typeOpenEBS, fromVersion: "4.4.0", from: rawfileOn, toVersion: "4.2.0", to: map[string]any{},
			want: []string{"rawfile.csi.openebs.io: openebs chart 4.2.0 has no rawfile-localpv subchart, which 4.4.0 installs"},
		},
		{
			name: "hostpath base path", typ: typeOpenEBS, fromVersion: "4.4.0", from: openebs("4.4.0", nil), toVersion: "4.4.0",
			to:   openebs("4.4.0", func(o *openebsSettings) { o.HostpathBasePath = "/data/openebs" }),
			want: []string{"openebs.io/local@openebs-hostpath: hostpath_base_path changes from /var/openebs/local to /data/openebs"},
		},
		{
			// The chart's default ("" in its values) is the default path: no change.
			name: "hostpath base path as the chart's default", typ: typeOpenEBS, fromVersion: "4.4.0", from: map[string]any{}, toVersion: "4.4.0",
			to: openebs("4.4.0", allOn),
		},
		{
			name: "hostpath base path with a trailing slash", typ: typeOpenEBS, fromVersion: "4.4.0", from: openebs("4.4.0", nil), toVersion: "4.4.0",
			to: openebs("4.4.0", func(o *openebsSettings) { o.HostpathBasePath = defaultHostpathBasePath + "/" }),
		},
		{
			name: "hostpath base path of a renamed class", typ: typeOpenEBS, fromVersion: "4.4.0",
			from: openebs("4.4.0", func(o *openebsSettings) { o.HostpathClassName = "fast" }), toVersion: "4.4.0",
			to:   openebs("4.4.0", func(o *openebsSettings) { o.HostpathClassName, o.HostpathBasePath = "local", "/mnt/x" }),
			want: []string{"openebs.io/local@fast: hostpath_base_path changes"},
		},
		{
			// The table says Mayastor is on by default; this archive says off: a release installed
			// with its defaults never had Mayastor, so turning it off explicitly strands nothing.
			name: "the archive's default, not the table's", typ: typeOpenEBS, fromVersion: "4.4.0", fromChart: mayastorOffByDefault, from: map[string]any{},
			toVersion: "4.4.0", toChart: mayastorOffByDefault, to: openebs("4.4.0", func(o *openebsSettings) { o.LVMEnabled, o.ZFSEnabled = true, true }),
		},
		{
			// The same change over an archive that turns Mayastor on by default strands it.
			name: "the archive's default on", typ: typeOpenEBS, fromVersion: "4.4.0", fromChart: allOnByDefault, from: map[string]any{},
			toVersion: "4.4.0", toChart: allOnByDefault, to: openebs("4.4.0", func(o *openebsSettings) { o.LVMEnabled, o.ZFSEnabled = true, true }),
			want: []string{"io.openebs.csi-mayastor: mayastor_enabled (engines.replicated.mayastor.enabled) turns from true to false"},
		},
		{
			// Installed with the chart's defaults from an archive that had Mayastor on; the new
			// archive turns it off by default and the plan leaves it unset.
			name: "an upgrade whose archive turns an engine off by default", typ: typeOpenEBS, fromVersion: "4.4.0", fromChart: allOnByDefault, from: map[string]any{},
			toVersion: "4.4.0", toChart: mayastorOffByDefault, to: map[string]any{},
			want: []string{"io.openebs.csi-mayastor: mayastor_enabled (engines.replicated.mayastor.enabled) turns from true to false"},
		},
		{name: "longhorn v2 stays on", typ: typeLonghorn, fromVersion: "1.9.2", fromChart: longhornChart, from: v2("true"), toVersion: "1.9.2", toChart: longhornChart, to: v2("true")},
		{name: "longhorn v2 turned on", typ: typeLonghorn, fromVersion: "1.9.2", fromChart: longhornChart, from: map[string]any{}, toVersion: "1.9.2", toChart: longhornChart, to: v2(true)},
		{
			name: "longhorn v2 turned off", typ: typeLonghorn, fromVersion: "1.9.2", fromChart: longhornChart, from: v2("true"), toVersion: "1.9.2", toChart: longhornChart, to: v2("false"),
			want: []string{"driver.longhorn.io: defaultSettings.v2DataEngine turns from true to false"},
		},
		{
			name: "longhorn v2 left to the chart's default", typ: typeLonghorn, fromVersion: "1.9.2", fromChart: longhornChart, from: v2(true), toVersion: "1.9.2", toChart: longhornChart, to: map[string]any{},
			want: []string{"driver.longhorn.io: defaultSettings.v2DataEngine turns from true to false"},
		},
		{name: "longhorn unchanged", typ: typeLonghorn, fromVersion: "1.8.1", from: longhorn(""), toVersion: "1.9.2", to: longhorn("")},
		{name: "longhorn unset to default", typ: typeLonghorn, fromVersion: "1.8.1", from: map[string]any{}, toVersion: "1.8.1", to: longhorn("/var/lib/longhorn")},
		{
			name: "longhorn data path", typ: typeLonghorn, fromVersion: "1.8.1", from: longhorn(""), toVersion: "1.8.1", to: longhorn("/mnt/longhorn"),
			want: []string{"driver.longhorn.io: default_data_path changes from /var/lib/longhorn/ to /mnt/longhorn"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			none, err := releaseDrivers(tc.typ, "") // the table's drivers alone: TestReleaseDrivers has the manifest's
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range strandedBy(tc.typ, none, tc.fromVersion, tc.fromChart, tc.from, tc.toVersion, tc.toChart, tc.to) {
				key := strings.Join(s.Drivers, ",")
				if s.Class != "" {
					key += "@" + s.Class
				}
				got = append(got, key+": "+s.Why)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			for _, w := range tc.want {
				if !slices.ContainsFunc(got, func(g string) bool { return strings.Contains(g, w) }) {
					t.Errorf("got %q, want one with %q", got, w)
				}
			}
		})
	}
}

// TestSubchartDrivers: every driver an engine's subchart installs is one the destroy guard
// counts, and every conditional engine subchart of the table has its driver.
func TestSubchartDrivers(t *testing.T) {
	for path, d := range subchartDrivers {
		if !slices.Contains(backendDrivers[typeOpenEBS], d) {
			t.Errorf("subchart %s: driver %s is not in backendDrivers", path, d)
		}
	}
	for _, r := range engines[typeOpenEBS].Ranges {
		for _, d := range r.Dependencies {
			if strings.HasPrefix(d.Condition, "engines.") {
				if _, ok := subchartDrivers[d.Path]; !ok {
					t.Errorf("openebs %s: engine subchart %s (%s) has no driver in subchartDrivers", r.Minor, d.Path, d.Condition)
				}
			}
		}
	}
}

func TestOpenEBSUpgradePath(t *testing.T) {
	e := engines[typeOpenEBS]
	for _, tc := range []struct{ from, to, want string }{
		{"4.0.1", "4.4.0", ""}, // minors may be skipped (Mayastor's upgrade job checks only the direction)
		{"4.0.0", "4.0.1", ""},
		{"4.2.0", "4.2.0", ""},
		{"", "4.0.1", ""},
		{"4.4.0", "4.0.1", "openebs chart 4.4.0 is installed: downgrading to 4.0.1 is not supported by openebs"},
		{"4.1.3", "4.1.2", "downgrading to 4.1.2 is not supported"},
		{"4.4.0", "4.4.0-rc.1", "downgrading to 4.4.0-rc.1"},
	} {
		err := e.upgradeCheck(tc.from, tc.to)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s -> %s: %v, want %q", tc.from, tc.to, err, tc.want)
		}
	}
}
