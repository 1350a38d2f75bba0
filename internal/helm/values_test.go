package helm

import (
	"reflect"
	"strings"
	"testing"
)

// docs turns one document into the documents list ("" is none).
func docs(doc string) []string {
	if doc == "" {
		return nil
	}
	return []string{doc}
}

func TestMergeValues(t *testing.T) {
	tests := []struct {
		name  string
		typed map[string]any
		yaml  string
		sets  []Set
		want  map[string]any
	}{
		{
			name:  "typed only, dotted keys expand",
			typed: map[string]any{"persistence.defaultClassReplicaCount": 2, "persistence.defaultClass": true},
			want:  map[string]any{"persistence": map[string]any{"defaultClassReplicaCount": 2, "defaultClass": true}},
		},
		{
			name:  "yaml overrides typed, maps merge",
			typed: map[string]any{"persistence.defaultClassReplicaCount": 2, "persistence.defaultClass": true},
			yaml:  "persistence:\n  defaultClass: false\nlonghornUI:\n  replicas: 1\n",
			want: map[string]any{
				"persistence": map[string]any{"defaultClassReplicaCount": 2, "defaultClass": false},
				"longhornUI":  map[string]any{"replicas": float64(1)},
			},
		},
		{
			name:  "set overrides yaml and typed",
			typed: map[string]any{"a.b": "typed"},
			yaml:  "a:\n  b: yaml\n  c: keep\n",
			sets:  []Set{{Name: "a.b", Value: "set"}},
			want:  map[string]any{"a": map[string]any{"b": "set", "c": "keep"}},
		},
		{
			name: "set types values like helm; set-string keeps text; commas are literal",
			sets: []Set{{Name: "n", Value: "3"}, {Name: "b", Value: "true"}, {Name: "s", Value: "3", String: true}, {Name: "list", Value: "a,b"}},
			want: map[string]any{"n": int64(3), "b": true, "s": "3", "list": "a,b"},
		},
		{
			name:  "escaped dot is a literal dot in a key",
			typed: map[string]any{`annotations.example\.com/x`: "y"},
			want:  map[string]any{"annotations": map[string]any{"example.com/x": "y"}},
		},
		{
			name:  "typed map value merges with dotted siblings",
			typed: map[string]any{"engines.local": map[string]any{"lvm": map[string]any{"enabled": false}}, "engines.replicated.mayastor.enabled": true},
			want: map[string]any{"engines": map[string]any{
				"local":      map[string]any{"lvm": map[string]any{"enabled": false}},
				"replicated": map[string]any{"mayastor": map[string]any{"enabled": true}},
			}},
		},
		{
			name: "empty everything",
			want: map[string]any{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := MergeValues(tt.typed, docs(tt.yaml), tt.sets)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

func TestMergeValuesDoesNotAliasTyped(t *testing.T) {
	inner := map[string]any{"enabled": true}
	typed := map[string]any{"x": inner}
	got, err := MergeValues(typed, []string{"x:\n  enabled: false\n"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if inner["enabled"] != true {
		t.Fatalf("typed input was modified: %v", inner)
	}
	if got["x"].(map[string]any)["enabled"] != false { //nolint:forcetypeassert // test
		t.Fatalf("got %v", got)
	}
}

func TestMergeValuesErrors(t *testing.T) {
	tests := []struct {
		name  string
		typed map[string]any
		yaml  string
		sets  []Set
	}{
		{name: "yaml not a mapping", yaml: "- a\n- b\n"},
		{name: "yaml syntax", yaml: "a: [\n"},
		{name: "set without name", sets: []Set{{Value: "x"}}},
		{name: "typed key conflicts with a parent scalar", typed: map[string]any{"a": 1, "a.b": 2}},
		{name: "empty path segment", typed: map[string]any{"a..b": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := MergeValues(tt.typed, docs(tt.yaml), tt.sets); err == nil {
				t.Fatal("expected an error")
			}
		})
	}
}

func TestContradictions(t *testing.T) {
	typed := map[string]any{
		"persistence.defaultClassReplicaCount":     2,
		"persistence.defaultDataLocality":          "best-effort",
		"defaultSettings.deletingConfirmationFlag": false,
		"longhornUI.replicas":                      1,
	}
	tests := []struct {
		name string
		yaml string
		sets []Set
		want []string // Source + " " + Key
	}{
		{name: "nothing raw", want: nil},
		{name: "same values written differently", yaml: "persistence:\n  defaultClassReplicaCount: \"2\"\nlonghornUI:\n  replicas: 1.0\n", sets: []Set{{Name: "defaultSettings.deletingConfirmationFlag", Value: "false"}}, want: nil},
		{name: "unrelated keys", yaml: "image:\n  pullPolicy: Never\n", sets: []Set{{Name: "csi.kubeletRootDir", Value: "/var/lib/kubelet"}}, want: nil},
		{name: "yaml contradicts", yaml: "persistence:\n  defaultClassReplicaCount: 3\n", want: []string{"values[0] persistence.defaultClassReplicaCount"}},
		{name: "set contradicts", sets: []Set{{Name: "longhornUI.replicas", Value: "2"}}, want: []string{"set[longhornUI.replicas] longhornUI.replicas"}},
		{name: "set-string of same text is fine", sets: []Set{{Name: "longhornUI.replicas", Value: "1", String: true}}, want: nil},
		{name: "yaml null deletes a typed key", yaml: "persistence:\n  defaultDataLocality: null\n", want: []string{"values[0] persistence.defaultDataLocality"}},
		{name: "parent replaced by scalar", yaml: "persistence: none\n", want: []string{"values[0] persistence.defaultClassReplicaCount", "values[0] persistence.defaultDataLocality"}},
		{name: "both sources", yaml: "defaultSettings:\n  deletingConfirmationFlag: true\n", sets: []Set{{Name: "persistence.defaultDataLocality", Value: "disabled"}}, want: []string{"values[0] defaultSettings.deletingConfirmationFlag", "set[persistence.defaultDataLocality] persistence.defaultDataLocality"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Contradictions(typed, docs(tt.yaml), tt.sets)
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			for _, c := range got {
				keys = append(keys, c.Source+" "+c.Key)
				if c.String() == "" {
					t.Error("empty description")
				}
			}
			if !reflect.DeepEqual(keys, tt.want) {
				t.Errorf("got %q, want %q", keys, tt.want)
			}
		})
	}
}

// TestMergeValuesDocumentsInOrder: each document merges over the ones before it (maps key by
// key, lists and scalars replaced), then the set entries, sensitive ones included, in order.
func TestMergeValuesDocumentsInOrder(t *testing.T) {
	got, err := MergeValues(map[string]any{"a.typed": 1},
		[]string{
			"a:\n  x: first\n  keep: 1\nlist: [1, 2]\n",
			"",
			"a:\n  x: second\nlist: [3]\n",
		},
		[]Set{{Name: "a.x", Value: "set"}, {Name: "secret.token", Value: "s3cr3t", Sensitive: true}, {Name: "a.x", Value: "last"}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"a":      map[string]any{"typed": 1, "x": "last", "keep": float64(1)},
		"list":   []any{float64(3)},
		"secret": map[string]any{"token": "s3cr3t"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %#v\nwant %#v", got, want)
	}
	if _, err := MergeValues(nil, []string{"a: 1\n", "- not a map\n"}, nil); err == nil || !strings.Contains(err.Error(), "values[1]") {
		t.Errorf("a bad second document: %v, want an error naming values[1]", err)
	}
}

// TestSensitiveNeverPrinted: a contradiction or parse error of a set_sensitive entry names the
// entry but never its value.
func TestSensitiveNeverPrinted(t *testing.T) {
	const secret = "hunter2-secret"
	found, err := Contradictions(map[string]any{"auth.password": "typed"}, nil, []Set{{Name: "auth.password", Value: secret, Sensitive: true}})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0].Source != "set_sensitive[auth.password]" {
		t.Fatalf("got %+v", found)
	}
	if text := found[0].String(); strings.Contains(text, secret) || !strings.Contains(text, "(sensitive value)") {
		t.Errorf("contradiction text %q shows the value or does not say it is hidden", text)
	}
	for _, s := range []Set{{Value: secret, Sensitive: true}, {Name: "a[", Value: secret, Sensitive: true}} {
		_, err := MergeValues(nil, nil, []Set{s})
		if err == nil || strings.Contains(err.Error(), secret) {
			t.Errorf("set_sensitive %q: error %v must exist and must not show the value", s.Name, err)
		}
	}
}

func TestContradictionString(t *testing.T) {
	c := Contradiction{Key: "a.b", Typed: 2, Raw: 3, Source: "values"}
	if got, want := c.String(), "values sets a.b to 3, but the typed setting asks for 2"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestSplitPath(t *testing.T) {
	tests := map[string][]string{
		"a":           {"a"},
		"a.b.c":       {"a", "b", "c"},
		`a\.b.c`:      {"a.b", "c"},
		"a..b":        nil,
		"":            nil,
		"a.":          nil,
		`x.k8s\.io/y`: {"x", "k8s.io/y"},
	}
	for in, want := range tests {
		if got := splitPath(in); !reflect.DeepEqual(got, want) {
			t.Errorf("splitPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzMergeValues(f *testing.F) {
	f.Add("a:\n  b: 1\n", "a.b", "2")
	f.Add("", "x", "a,b")
	f.Fuzz(func(t *testing.T, doc, name, value string) {
		typed := map[string]any{"a.b": 1}
		sets := []Set{{Name: name, Value: value}}
		_, _ = MergeValues(typed, []string{doc, doc}, sets)
		_, _ = Contradictions(typed, []string{doc}, sets)
	})
}

func TestCheckSetName(t *testing.T) {
	for name, ok := range map[string]bool{
		"a": true, "a.b.c": true, "a[0]": true, "a[0].b": true, "a[1][2]": true, `a\.b.c`: true, "nodeSelector.kubernetes\\.io/os": true,
		"a[": false, "a[0": false, "a[x]": false, "a]": false, "[0]": false, ".a": false, "a.": false, "a..b": false, "a[0]b": false,
	} {
		if err := checkSetName(name); (err == nil) != ok {
			t.Errorf("checkSetName(%q) = %v, want ok=%t", name, err, ok)
		}
	}
}

// TestMaskPaths: the same paths masked in two values trees make them equal exactly when they
// differ only there, the input is left alone, and a malformed path is an error.
func TestMaskPaths(t *testing.T) {
	want := map[string]any{"a": map[string]any{"b": "x", "c": 2}}
	liveA := map[string]any{"b": "secret", "c": 2}
	live := map[string]any{"a": liveA, "l": []any{nil, "token"}}
	names := []string{"a.b", "l[1]"}
	w, err := MaskPaths(want, names)
	if err != nil {
		t.Fatal(err)
	}
	l, err := MaskPaths(live, names)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(w, l) {
		t.Errorf("masked trees differ:\n%v\n%v", w, l)
	}
	if liveA["b"] != "secret" {
		t.Errorf("MaskPaths changed its input: %v", live)
	}
	liveA["c"] = 3
	if l, err = MaskPaths(live, names); err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(w, l) {
		t.Errorf("a difference outside the masked paths was masked too: %v", l)
	}
	if _, err := MaskPaths(want, []string{"a..b"}); err == nil {
		t.Error("a malformed path was accepted")
	}
}
