package backend

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// realChart is what the real chart of one release says (Chart.yaml and values.yaml at its
// release tag: longhorn/longhorn chart/ at v<version>; openebs/openebs charts/ at
// openebs-<version>, with its localpv-provisioner subchart's values where the tag vendors it;
// 4.4.0 from a vendored copy of the packaged chart). Recorded here by hand from those files;
// the test never reads them.
type realChart struct {
	chart, version, kubeVersion string
	// dependencies: subchart name -> condition ("" for none).
	dependencies map[string]string
	// defaults: value key -> default, for the keys the provider uses that the files hold.
	defaults map[string]any
}

var realCharts = []realChart{
	{chart: "longhorn", version: "1.7.0", kubeVersion: ">=1.21.0-0", defaults: map[string]any{"persistence.defaultClass": true, "persistence.defaultClassReplicaCount": 3, "persistence.defaultDataLocality": "disabled", "defaultSettings.defaultReplicaCount": nil, "defaultSettings.defaultDataLocality": nil, "defaultSettings.defaultDataPath": nil, "defaultSettings.deletingConfirmationFlag": nil, "longhornUI.replicas": 2}},
	{chart: "longhorn", version: "1.7.1", kubeVersion: ">=1.21.0-0", defaults: map[string]any{"persistence.defaultClass": true, "persistence.defaultClassReplicaCount": 3, "persistence.defaultDataLocality": "disabled", "defaultSettings.defaultReplicaCount": nil, "defaultSettings.defaultDataLocality": nil, "defaultSettings.defaultDataPath": nil, "defaultSettings.deletingConfirmationFlag": nil, "longhornUI.replicas": 2}},
	{chart: "longhorn", version: "1.7.2", kubeVersion: ">=1.21.0-0", defaults: map[string]any{"persistence.defaultClass": true, "persistence.defaultClassReplicaCount": 3, "persistence.defaultDataLocality": "disabled", "defaultSettings.defaultReplicaCount": nil, "defaultSettings.defaultDataLocality": nil, "defaultSettings.defaultDataPath": nil, "defaultSettings.deletingConfirmationFlag": nil, "longhornUI.replicas": 2}},
	{chart: "longhorn", version: "1.7.3", kubeVersion: ">=1.21.0-0", defaults: map[string]any{"persistence.defaultClass": true, "persistence.defaultClassReplicaCount": 3, "persistence.defaultDataLocality": "disabled", "defaultSettings.defaultReplicaCount": nil, "defaultSettings.defaultDataLocality": nil, "defaultSettings.defaultDataPath": nil, "defaultSettings.deletingConfirmationFlag": nil, "longhornUI.replicas": 2}},
	{chart: "longhorn", version: "1.8.0", kubeVersion: ">=1.25.0-0", defaults: map[string]any{"persistence.defaultClass": true, "persistence.defaultClassReplicaCount": 3, "persistence.defaultDataLocality": "disabled", "defaultSettings.defaultReplicaCount": nil, "defaultSettings.defaultDataLocality": nil, "defaultSettings.defaultDataPath": nil, "defaultSettings.deletingConfirmationFlag": nil, "longhornUI.replicas": 2}},
	{chart: "longhorn", version: "1.8.1", kubeVersion: ">=1.25.0-0", defaults: map[string]any{"persistence.defaultClass": true, "persistence.defaultClassReplicaCount": 3, "persistence.defaultDataLocality": "disabled", "defaultSettings.defaultReplicaCount": nil, "defaultSettings.defaultDataLocality": nil, "defaultSettings.defaultDataPath": nil, "defaultSettings.deletingConfirmationFlag": nil, "longhornUI.replicas": 2}},
	{chart: "longhorn", version: "1.8.2", kubeVersion: ">=1.25.0-0", defaults: map[string]any{"persistence.defaultClass": true, "persistence.defaultClassReplicaCount": 3, "persistence.defaultDataLocality": "disabled", "defaultSettings.defaultReplicaCount": nil, "defaultSettings.defaultDataLocality": nil, "defaultSettings.defaultDataPath": nil, "defaultSettings.deletingConfirmationFlag": nil, "longhornUI.replicas": 2}},
	{chart: "longhorn", version: "1.9.0", kubeVersion: ">=1.25.0-0", defaults: map[string]any{"persistence.defaultClass": true, "persistence.defaultClassReplicaCount": 3, "persistence.defaultDataLocality": "disabled", "defaultSettings.defaultReplicaCount": nil, "defaultSettings.defaultDataLocality": nil, "defaultSettings.defaultDataPath": nil, "defaultSettings.deletingConfirmationFlag": nil, "longhornUI.replicas": 2}},
	{chart: "longhorn", version: "1.9.1", kubeVersion: ">=1.25.0-0", defaults: map[string]any{"persistence.defaultClass": true, "persistence.defaultClassReplicaCount": 3, "persistence.defaultDataLocality": "disabled", "defaultSettings.defaultReplicaCount": nil, "defaultSettings.defaultDataLocality": nil, "defaultSettings.defaultDataPath": nil, "defaultSettings.deletingConfirmationFlag": nil, "longhornUI.replicas": 2}},
	{chart: "longhorn", version: "1.9.2", kubeVersion: ">=1.25.0-0", defaults: map[string]any{"persistence.defaultClass": true, "persistence.defaultClassReplicaCount": 3, "persistence.defaultDataLocality": "disabled", "defaultSettings.defaultReplicaCount": nil, "defaultSettings.defaultDataLocality": nil, "defaultSettings.defaultDataPath": nil, "defaultSettings.deletingConfirmationFlag": nil, "longhornUI.replicas": 2}},
	{chart: "longhorn", version: "1.10.0", kubeVersion: ">=1.25.0-0", defaults: map[string]any{"persistence.defaultClass": true, "persistence.defaultClassReplicaCount": 3, "persistence.defaultDataLocality": "disabled", "defaultSettings.defaultReplicaCount": nil, "defaultSettings.defaultDataLocality": nil, "defaultSettings.defaultDataPath": nil, "defaultSettings.deletingConfirmationFlag": nil, "longhornUI.replicas": 2}},
	{chart: "longhorn", version: "1.10.1", kubeVersion: ">=1.25.0-0", defaults: map[string]any{"persistence.defaultClass": true, "persistence.defaultClassReplicaCount": 3, "persistence.defaultDataLocality": "disabled", "defaultSettings.defaultReplicaCount": nil, "defaultSettings.defaultDataLocality": nil, "defaultSettings.defaultDataPath": nil, "defaultSettings.deletingConfirmationFlag": nil, "longhornUI.replicas": 2}},
	{chart: "longhorn", version: "1.10.2", kubeVersion: ">=1.25.0-0", defaults: map[string]any{"persistence.defaultClass": true, "persistence.defaultClassReplicaCount": 3, "persistence.defaultDataLocality": "disabled", "defaultSettings.defaultReplicaCount": nil, "defaultSettings.defaultDataLocality": nil, "defaultSettings.defaultDataPath": nil, "defaultSettings.deletingConfirmationFlag": nil, "longhornUI.replicas": 2}},
	{chart: "longhorn", version: "1.11.0", kubeVersion: ">=1.25.0-0", defaults: map[string]any{"persistence.defaultClass": true, "persistence.defaultClassReplicaCount": 3, "persistence.defaultDataLocality": "disabled", "defaultSettings.defaultReplicaCount": nil, "defaultSettings.defaultDataLocality": nil, "defaultSettings.defaultDataPath": nil, "defaultSettings.deletingConfirmationFlag": nil, "longhornUI.replicas": 2}},
	{chart: "longhorn", version: "1.11.3", kubeVersion: ">=1.25.0-0", defaults: map[string]any{"persistence.defaultClass": true, "persistence.defaultClassReplicaCount": 3, "persistence.defaultDataLocality": "disabled", "defaultSettings.defaultReplicaCount": nil, "defaultSettings.defaultDataLocality": nil, "defaultSettings.defaultDataPath": nil, "defaultSettings.deletingConfirmationFlag": nil, "longhornUI.replicas": 2}},
	{chart: "longhorn", version: "1.12.0", kubeVersion: ">=1.25.0-0", defaults: map[string]any{"persistence.defaultClass": true, "persistence.defaultClassReplicaCount": 3, "persistence.defaultDataLocality": "disabled", "defaultSettings.defaultReplicaCount": nil, "defaultSettings.defaultDataLocality": nil, "defaultSettings.defaultDataPath": nil, "defaultSettings.deletingConfirmationFlag": nil, "longhornUI.replicas": 2}},
	{chart: "longhorn", version: "1.12.1", kubeVersion: ">=1.25.0-0", defaults: map[string]any{"persistence.defaultClass": true, "persistence.defaultClassReplicaCount": 3, "persistence.defaultDataLocality": "disabled", "defaultSettings.defaultReplicaCount": nil, "defaultSettings.defaultDataLocality": nil, "defaultSettings.defaultDataPath": nil, "defaultSettings.deletingConfirmationFlag": nil, "longhornUI.replicas": 2}},
	{chart: "openebs", version: "4.0.0", dependencies: map[string]string{"openebs-crds": "", "localpv-provisioner": "", "zfs-localpv": "engines.local.zfs.enabled", "lvm-localpv": "engines.local.lvm.enabled", "mayastor": "engines.replicated.mayastor.enabled"}, defaults: map[string]any{"engines.replicated.mayastor.enabled": true, "engines.local.lvm.enabled": true, "engines.local.zfs.enabled": true, "openebs-crds.csi.volumeSnapshots.enabled": true, "localpv-provisioner.hostpathClass.basePath": "", "localpv-provisioner.hostpathClass.name": "openebs-hostpath", "localpv-provisioner.hostpathClass.isDefaultClass": false}},
	{chart: "openebs", version: "4.0.1", dependencies: map[string]string{"openebs-crds": "", "localpv-provisioner": "", "zfs-localpv": "engines.local.zfs.enabled", "lvm-localpv": "engines.local.lvm.enabled", "mayastor": "engines.replicated.mayastor.enabled"}, defaults: map[string]any{"engines.replicated.mayastor.enabled": true, "engines.local.lvm.enabled": true, "engines.local.zfs.enabled": true, "openebs-crds.csi.volumeSnapshots.enabled": true, "localpv-provisioner.hostpathClass.basePath": "", "localpv-provisioner.hostpathClass.name": "openebs-hostpath", "localpv-provisioner.hostpathClass.isDefaultClass": false}},
	{chart: "openebs", version: "4.1.0", dependencies: map[string]string{"openebs-crds": "", "localpv-provisioner": "", "zfs-localpv": "engines.local.zfs.enabled", "lvm-localpv": "engines.local.lvm.enabled", "mayastor": "engines.replicated.mayastor.enabled"}, defaults: map[string]any{"engines.replicated.mayastor.enabled": true, "engines.local.lvm.enabled": true, "engines.local.zfs.enabled": true, "openebs-crds.csi.volumeSnapshots.enabled": true}},
	{chart: "openebs", version: "4.1.1", dependencies: map[string]string{"openebs-crds": "", "localpv-provisioner": "", "zfs-localpv": "engines.local.zfs.enabled", "lvm-localpv": "engines.local.lvm.enabled", "mayastor": "engines.replicated.mayastor.enabled"}, defaults: map[string]any{"engines.replicated.mayastor.enabled": true, "engines.local.lvm.enabled": true, "engines.local.zfs.enabled": true, "openebs-crds.csi.volumeSnapshots.enabled": true}},
	{chart: "openebs", version: "4.1.2", dependencies: map[string]string{"openebs-crds": "", "localpv-provisioner": "", "zfs-localpv": "engines.local.zfs.enabled", "lvm-localpv": "engines.local.lvm.enabled", "mayastor": "engines.replicated.mayastor.enabled"}, defaults: map[string]any{"engines.replicated.mayastor.enabled": true, "engines.local.lvm.enabled": true, "engines.local.zfs.enabled": true, "openebs-crds.csi.volumeSnapshots.enabled": true}},
	{chart: "openebs", version: "4.1.3", dependencies: map[string]string{"openebs-crds": "", "localpv-provisioner": "", "zfs-localpv": "engines.local.zfs.enabled", "lvm-localpv": "engines.local.lvm.enabled", "mayastor": "engines.replicated.mayastor.enabled"}, defaults: map[string]any{"engines.replicated.mayastor.enabled": true, "engines.local.lvm.enabled": true, "engines.local.zfs.enabled": true, "openebs-crds.csi.volumeSnapshots.enabled": true}},
	{chart: "openebs", version: "4.2.0", dependencies: map[string]string{"openebs-crds": "", "localpv-provisioner": "", "zfs-localpv": "engines.local.zfs.enabled", "lvm-localpv": "engines.local.lvm.enabled", "mayastor": "engines.replicated.mayastor.enabled"}, defaults: map[string]any{"engines.replicated.mayastor.enabled": true, "engines.local.lvm.enabled": true, "engines.local.zfs.enabled": true, "openebs-crds.csi.volumeSnapshots.enabled": true}},
	{chart: "openebs", version: "4.4.0", dependencies: map[string]string{"openebs-crds": "", "loki": "loki.enabled", "alloy": "alloy.enabled", "localpv-provisioner": "", "zfs-localpv": "engines.local.zfs.enabled", "lvm-localpv": "engines.local.lvm.enabled", "rawfile-localpv": "engines.local.rawfile.enabled", "mayastor": "engines.replicated.mayastor.enabled"}, defaults: map[string]any{"engines.replicated.mayastor.enabled": true, "engines.local.lvm.enabled": true, "engines.local.zfs.enabled": true, "engines.local.rawfile.enabled": false, "loki.enabled": true, "alloy.enabled": true, "openebs-crds.csi.volumeSnapshots.enabled": true, "localpv-provisioner.hostpathClass.basePath": "", "localpv-provisioner.hostpathClass.name": "openebs-hostpath", "localpv-provisioner.hostpathClass.isDefaultClass": false}},
}

// realMayastor is the mayastor subchart (openebs/mayastor-extensions chart/ at its v<version>
// tags) that an OpenEBS release pins, for the keys the provider reads below `mayastor.`.
var realMayastor = []struct {
	openebs, mayastor string
	dependencies      map[string]string
	defaults          map[string]any
}{
	{"4.0.0", "2.6.0", map[string]string{"loki-stack": "loki-stack.enabled"}, map[string]any{"loki-stack.enabled": true, "etcd.replicaCount": 3, "storageClass.nameSuffix": "single-replica"}},
	{"4.0.1", "2.6.1", map[string]string{"loki-stack": "loki-stack.enabled"}, map[string]any{"loki-stack.enabled": true, "etcd.replicaCount": 3, "storageClass.nameSuffix": "single-replica"}},
	{"4.1.0", "2.7.0", map[string]string{"loki-stack": "loki-stack.enabled"}, map[string]any{"loki-stack.enabled": true, "etcd.replicaCount": 3, "storageClass.nameSuffix": "single-replica"}},
	{"4.1.1", "2.7.1", map[string]string{"loki-stack": "loki-stack.enabled"}, map[string]any{"loki-stack.enabled": true, "etcd.replicaCount": 3, "storageClass.nameSuffix": "single-replica"}},
	// 2.10.0: Chart.yaml only (its values.yaml was not read).
	{"4.4.0", "2.10.0", map[string]string{"loki": "loki.enabled", "alloy": "alloy.enabled"}, nil},
}

// TestTableMatchesRealCharts checks engines.go's table against the facts above: every real
// release is accepted, its dependency conditions and the defaults of the keys the provider uses
// are the table's, and every pinned newest patch is a release recorded here.
func TestTableMatchesRealCharts(t *testing.T) {
	known := map[string]bool{}
	for _, rc := range realCharts {
		known[rc.chart+" "+rc.version] = true
		e := engines[rc.chart]
		r, err := e.rangeFor(rc.version)
		if err != nil {
			t.Errorf("%s %s: %v", rc.chart, rc.version, err)
			continue
		}
		if r.KubeVersion != rc.kubeVersion {
			t.Errorf("%s %s: table kubeVersion %q, chart %q", rc.chart, rc.version, r.KubeVersion, rc.kubeVersion)
		}
		top := map[string]string{}
		for _, d := range r.Dependencies {
			if !strings.Contains(d.Path, "/") {
				top[d.Path] = d.Condition
			}
		}
		if rc.dependencies == nil {
			rc.dependencies = map[string]string{}
		}
		if !reflect.DeepEqual(top, rc.dependencies) {
			t.Errorf("%s %s: table dependencies %v, chart %v", rc.chart, rc.version, top, rc.dependencies)
		}
		for key, def := range rc.defaults {
			k, ok := r.key(key)
			if !ok {
				continue
			}
			if fmt.Sprint(k.Default) != fmt.Sprint(def) || (k.Default == nil) != (def == nil) {
				t.Errorf("%s %s: %s: table default %v, chart %v", rc.chart, rc.version, key, k.Default, def)
			}
		}
		// Every key the provider writes in this range is in the chart's values (the files read
		// for it: the umbrella's values, and the localpv-provisioner subchart's where recorded).
		for _, k := range r.Keys {
			if k.Key == "" || strings.HasPrefix(k.Key, "mayastor.") {
				continue
			}
			if strings.HasPrefix(k.Key, "localpv-provisioner.") && !hasPrefix(rc.defaults, "localpv-provisioner.") {
				continue
			}
			if _, ok := rc.defaults[k.Key]; !ok {
				t.Errorf("%s %s: the table's key %s is not in the chart's values", rc.chart, rc.version, k.Key)
			}
		}
		for _, c := range r.Keys {
			if c.Condition && !slicesContainsValue(rc.dependencies, c.Key) {
				t.Errorf("%s %s: key %s is marked a condition but no dependency has it", rc.chart, rc.version, c.Key)
			}
		}
	}
	for _, m := range realMayastor {
		r, err := engines[typeOpenEBS].rangeFor(m.openebs)
		if err != nil {
			t.Fatal(err)
		}
		nested := map[string]string{}
		for _, d := range r.Dependencies {
			if name, ok := strings.CutPrefix(d.Path, "mayastor/"); ok {
				nested[name] = d.Condition
			}
		}
		for name, cond := range m.dependencies {
			if nested[name] != cond {
				t.Errorf("openebs %s (mayastor %s): subchart %s has condition %q, table %q", m.openebs, m.mayastor, name, cond, nested[name])
			}
		}
		for key, def := range m.defaults {
			if k, ok := r.key("mayastor." + key); ok && fmt.Sprint(k.Default) != fmt.Sprint(def) {
				t.Errorf("openebs %s (mayastor %s): %s default %v, table %v", m.openebs, m.mayastor, key, def, k.Default)
			}
		}
	}
	for _, e := range engines {
		for _, r := range e.Ranges {
			if !known[e.Name+" "+r.Newest] {
				t.Errorf("%s %s: the range's newest patch %s is not a release recorded in realCharts", e.Name, r.Minor, r.Newest)
			}
		}
	}
}

func hasPrefix(m map[string]any, prefix string) bool {
	for k := range m {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

func slicesContainsValue(m map[string]string, v string) bool {
	for _, x := range m {
		if x == v {
			return true
		}
	}
	return false
}

func TestOpenEBSValuesPerRange(t *testing.T) {
	s := defaultOpenEBSSettings()
	s.MayastorEnabled = true
	common := map[string]any{
		"engines.replicated.mayastor.enabled": true, "engines.local.lvm.enabled": false, "engines.local.zfs.enabled": false,
		"localpv-provisioner.hostpathClass.basePath": defaultHostpathBasePath, "localpv-provisioner.hostpathClass.name": defaultHostpathClassName,
		"localpv-provisioner.hostpathClass.isDefaultClass": false, "openebs-crds.csi.volumeSnapshots.enabled": true,
	}
	with := func(extra map[string]any) map[string]any {
		out := map[string]any{}
		for k, v := range common {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	for _, tc := range []struct {
		version string
		want    map[string]any
	}{
		// The same engine keys from 4.0.0 on; before 4.4, Loki is Mayastor's loki-stack.
		{"4.0.1", with(map[string]any{"mayastor.loki-stack.enabled": false})},
		{"4.2.0", with(map[string]any{"mayastor.loki-stack.enabled": false})},
		{"4.4.0", with(map[string]any{"loki.enabled": false, "alloy.enabled": false})},
	} {
		got, err := s.values(tc.version)
		if err != nil {
			t.Fatalf("%s: %v", tc.version, err)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %v\nwant %v", tc.version, got, tc.want)
		}
		if back := openebsFromValues(tc.version, expand(t, got)); back != s {
			t.Errorf("%s: read back %+v, want %+v", tc.version, back, s)
		}
	}
	// A release installed with the chart's defaults (no values) runs every engine, and its
	// add-ons where they are on by default; it reads back so.
	for version, want := range map[string]openebsSettings{
		"4.0.1": {MayastorEnabled: true, LVMEnabled: true, ZFSEnabled: true, LokiEnabled: true, VolumeSnapshotCRDs: true},
		"4.4.0": {MayastorEnabled: true, LVMEnabled: true, ZFSEnabled: true, LokiEnabled: true, AlloyEnabled: true, VolumeSnapshotCRDs: true},
	} {
		want.HostpathBasePath, want.HostpathClassName = defaultHostpathBasePath, defaultHostpathClassName
		if got := openebsFromValues(version, map[string]any{}); got != want {
			t.Errorf("%s with the chart's defaults reads back %+v, want %+v", version, got, want)
		}
	}
	// Every engine off, as the seed article installs it: the keys the 4.0.x chart's conditions read.
	off, err := defaultOpenEBSSettings().values("4.0.1")
	if err != nil {
		t.Fatal(err)
	}
	for _, cond := range []string{"engines.replicated.mayastor.enabled", "engines.local.lvm.enabled", "engines.local.zfs.enabled"} {
		if off[cond] != false {
			t.Errorf("4.0.1 with every engine off: %s = %v", cond, off[cond])
		}
	}
}

func TestUnsupportedVersionsAndSettings(t *testing.T) {
	for _, tc := range []struct{ typ, version, want string }{
		{typeOpenEBS, "3.10.0", "openebs chart version 3.10.0 is not supported"},
		{typeOpenEBS, "5.0.0", "4.0.x, 4.1.x, 4.2.x, 4.4.x"},
		{typeOpenEBS, "4.6.0-rc.1", "default: 4.4.0"},
		{typeLonghorn, "1.6.2", "longhorn chart version 1.6.2 is not supported"},
		{typeLonghorn, "2.0.0", "1.7.x, 1.8.x, 1.9.x, 1.10.x, 1.11.x, 1.12.x"},
		{typeLonghorn, "latest", "is not a semantic version"},
	} {
		s := spec{Type: tc.typ, OpenEBS: defaultOpenEBSSettings(), Longhorn: defaultLonghornSettings()}
		_, err := s.valuesFor(tc.version)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s: %v, want %q", tc.typ, tc.version, err, tc.want)
		}
	}
	for _, tc := range []struct {
		version  string
		mutate   func(*openebsSettings)
		want     string
		accepted bool
	}{
		{"4.1.3", func(o *openebsSettings) { o.AlloyEnabled = true }, "openebs.alloy_enabled: openebs chart 4.1.3: openebs charts 4.0.x to 4.2.x have no Alloy", false},
		{"4.2.0", func(o *openebsSettings) { o.LokiEnabled = true }, "installs Loki only as part of Mayastor", false},
		{"4.2.0", func(o *openebsSettings) { o.LokiEnabled, o.MayastorEnabled = true, true }, "", true},
		{"4.4.0", func(o *openebsSettings) { o.LokiEnabled, o.AlloyEnabled = true, true }, "", true},
	} {
		s := spec{Type: typeOpenEBS, OpenEBS: defaultOpenEBSSettings()}
		tc.mutate(&s.OpenEBS)
		_, err := s.valuesFor(tc.version)
		if tc.accepted != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s %+v: %v, want %q", tc.version, s.OpenEBS, err, tc.want)
		}
	}
}

func TestLonghornUpgradePath(t *testing.T) {
	e := engines[typeLonghorn]
	for _, tc := range []struct{ from, to, want string }{
		{"1.8.1", "1.9.2", ""},
		{"1.8.1", "1.8.2", ""},
		{"1.8.1", "1.8.1", ""},
		{"", "1.12.1", ""},
		{"1.8.1", "1.10.2", "Upgrade along 1.8.1 -> 1.9.2 -> 1.10.2"},
		{"1.7.2", "1.12.1", "Upgrade along 1.7.2 -> 1.8.2 -> 1.9.2 -> 1.10.2 -> 1.11.3 -> 1.12.1"},
		{"1.9.0", "1.8.2", "downgrading to 1.8.2 is not supported"},
		{"1.9.2", "1.9.1", "downgrading to 1.9.1 is not supported"},
	} {
		err := e.upgradeCheck(tc.from, tc.to)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s -> %s: %v, want %q", tc.from, tc.to, err, tc.want)
		}
	}
	if err := engines[typeOpenEBS].upgradeCheck("4.0.1", "4.4.0"); err != nil {
		t.Errorf("openebs upgrades across minors: %v", err)
	}
}

func TestLonghornValues(t *testing.T) {
	s := defaultLonghornSettings()
	s.DefaultReplicaCount, s.UIEnabled, s.DefaultDataLocality = 1, false, "best-effort"
	for _, version := range []string{"1.7.2", "1.9.2", "1.10.2", "1.12.1"} {
		got, err := s.values(version)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]any{
			"persistence.defaultClassReplicaCount": int64(1), "defaultSettings.defaultReplicaCount": "1",
			"persistence.defaultDataLocality": "best-effort", "defaultSettings.defaultDataLocality": "best-effort",
			"defaultSettings.defaultDataPath": defaultLonghornDataPath, "persistence.defaultClass": true, "longhornUI.replicas": 0,
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %v\nwant %v", version, got, want)
		}
		if back := longhornFromValues(version, expand(t, got)); back != s {
			t.Errorf("%s: read back %+v, want %+v", version, back, s)
		}
	}
}

func TestContradictions(t *testing.T) {
	s := spec{Type: typeOpenEBS, OpenEBS: defaultOpenEBSSettings(),
		Values: []string{"engines:\n  replicated:\n    mayastor:\n      enabled: true\nlocalpv-provisioner:\n  localpv:\n    replicas: 1\n"}}
	_, err := s.valuesFor("4.4.0")
	if err == nil || !strings.Contains(err.Error(), "engines.replicated.mayastor.enabled to true") {
		t.Fatalf("contradiction: %v", err)
	}
	// A raw value equal to the typed one is not a contradiction.
	s.Values = []string{"engines:\n  local:\n    lvm:\n      enabled: false\n"}
	v, err := s.valuesFor("4.4.0")
	if err != nil {
		t.Fatal(err)
	}
	if !sameValues(v, expand(t, v)) {
		t.Error("values do not survive a JSON round trip")
	}
}

func expand(t *testing.T, typed map[string]any) map[string]any {
	t.Helper()
	out := map[string]any{}
	for k, v := range typed {
		cur := out
		parts := strings.Split(k, ".")
		for _, p := range parts[:len(parts)-1] {
			next, ok := cur[p].(map[string]any)
			if !ok {
				next = map[string]any{}
				cur[p] = next
			}
			cur = next
		}
		cur[parts[len(parts)-1]] = v
	}
	m, ok := jsonNormal(out).(map[string]any)
	if !ok {
		t.Fatalf("%v is not a map after a JSON round trip", out)
	}
	return m
}

// TestLayoutFor: a version of a listed minor is verified; a later minor of the same major (and
// one between listed minors) follows the nearest listed layout below it, unverified; older minors,
// other majors and pre-releases of unlisted minors are refused.
func TestLayoutFor(t *testing.T) {
	for _, tc := range []struct {
		typ, version, minor string
		verified            bool
	}{
		{typeOpenEBS, "4.4.0", "4.4", true},
		{typeOpenEBS, "4.1.2", "4.1", true},
		// 4.3 has its own layout (4.4's Loki and Alloy, no rawfile; LayoutOnly), not 4.2's.
		{typeOpenEBS, "4.3.1", "4.3", false},
		{typeOpenEBS, "4.6.0", "4.4", false},
		{typeLonghorn, "1.12.5", "1.12", true},
		{typeLonghorn, "1.13.0", "1.12", false},
	} {
		r, verified, err := engines[tc.typ].layoutFor(tc.version)
		if err != nil || r.Minor != tc.minor || verified != tc.verified {
			t.Errorf("%s %s: layout %s verified %t (%v), want %s %t", tc.typ, tc.version, r.Minor, verified, err, tc.minor, tc.verified)
		}
	}
	for _, v := range []string{"3.10.0", "5.0.0", "4.6.0-rc.1"} {
		if r, _, err := engines[typeOpenEBS].layoutFor(v); err == nil {
			t.Errorf("openebs %s: accepted with the layout of %s", v, r.Minor)
		}
	}
}
