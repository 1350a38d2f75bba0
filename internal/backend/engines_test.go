package backend

import (
	"reflect"
	"strings"
	"testing"
)

func TestOpenEBSValuesPerLayout(t *testing.T) {
	s := defaultOpenEBSSettings()
	s.MayastorEnabled = true
	for _, tc := range []struct {
		version string
		want    map[string]any
	}{
		{"4.0.1", map[string]any{
			"mayastor.enabled": true, "engines.replicated.mayastorEnabled": true,
			"lvm-localpv.enabled": false, "engines.local.lvmEnabled": false,
			"zfs-localpv.enabled": false, "engines.local.zfsEnabled": false,
			keyHostpathBasePath: defaultHostpathBasePath, keyHostpathClassName: defaultHostpathClassName, keyHostpathDefault: false,
		}},
		{"4.3.0", map[string]any{
			"engines.replicated.mayastor.enabled": true, "engines.local.lvm.enabled": false, "engines.local.zfs.enabled": false,
			"loki.enabled": false, "alloy.enabled": false,
			keyHostpathBasePath: defaultHostpathBasePath, keyHostpathClassName: defaultHostpathClassName, keyHostpathDefault: false,
		}},
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
}

func TestUnsupportedVersions(t *testing.T) {
	for _, tc := range []struct{ typ, version, want string }{
		{typeOpenEBS, "3.10.0", "openebs chart version 3.10.0 is not supported"},
		{typeOpenEBS, "4.6.1", "4.1.x to 4.5.x"},
		{typeLonghorn, "1.6.2", "longhorn chart version 1.6.2 is not supported"},
		{typeLonghorn, "1.10.0", "1.7.x and 1.8.x"},
		{typeLonghorn, "latest", "is not a semantic version"},
	} {
		s := spec{Type: tc.typ, OpenEBS: defaultOpenEBSSettings(), Longhorn: defaultLonghornSettings()}
		_, err := s.valuesFor(tc.version)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s: %v, want %q", tc.typ, tc.version, err, tc.want)
		}
	}
	s := spec{Type: typeOpenEBS, OpenEBS: defaultOpenEBSSettings()}
	s.OpenEBS.LokiEnabled = true
	if _, err := s.valuesFor("4.0.1"); err == nil || !strings.Contains(err.Error(), "loki_enabled") {
		t.Errorf("loki on 4.0: %v", err)
	}
}

func TestLonghornValues(t *testing.T) {
	s := defaultLonghornSettings()
	s.DefaultReplicaCount, s.UIEnabled, s.DefaultDataLocality = 1, false, "best-effort"
	got, err := s.values("1.7.2")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		keyLonghornClassReplicas: int64(1), keyLonghornReplicaSetting: "1",
		keyLonghornClassLocality: "best-effort", keyLonghornLocalitySet: "best-effort",
		keyLonghornDataPath: defaultLonghornDataPath, keyLonghornDefaultClass: true, keyLonghornUIReplicas: 0,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
	if back := longhornFromValues(expand(t, got)); back != s {
		t.Errorf("read back %+v, want %+v", back, s)
	}
}

func TestContradictions(t *testing.T) {
	s := spec{Type: typeOpenEBS, OpenEBS: defaultOpenEBSSettings(),
		Values: []string{"engines:\n  replicated:\n    mayastor:\n      enabled: true\nlocalpv-provisioner:\n  localpv:\n    replicas: 1\n"}}
	_, err := s.valuesFor("4.3.0")
	if err == nil || !strings.Contains(err.Error(), "engines.replicated.mayastor.enabled to true") {
		t.Fatalf("contradiction: %v", err)
	}
	// The same raw document is not a contradiction on 4.0, whose toggle lives elsewhere; a value
	// equal to the typed one never is.
	s.Values = []string{"engines:\n  local:\n    lvm:\n      enabled: false\n"}
	v, err := s.valuesFor("4.3.0")
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
