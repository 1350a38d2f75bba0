package backend

import "testing"

// TestWithoutUnsetDefaults_chartDefault: a key the release does not set has the chart's default;
// a configuration that wants that value (an import of a release installed with the chart's
// defaults reads it back) is not drift even where the typed setting's own default renders
// another value (OpenEBS's engines: on in the chart, off by default in this provider). Another
// value is still drift.
func TestWithoutUnsetDefaults_chartDefault(t *testing.T) {
	keys := []valueKey{
		{Setting: settingMayastor, Key: "engines.replicated.mayastor.enabled", Default: true},
		{Setting: settingLoki, Key: "mayastor.loki-stack.enabled", Default: true},
	}
	// What the typed settings render at this provider's defaults.
	defaults := map[string]any{
		"engines":  map[string]any{"replicated": map[string]any{"mayastor": map[string]any{"enabled": false}}},
		"mayastor": map[string]any{"loki-stack": map[string]any{"enabled": false}},
	}
	want := map[string]any{
		"engines":  map[string]any{"replicated": map[string]any{"mayastor": map[string]any{"enabled": true}}},
		"mayastor": map[string]any{"loki-stack": map[string]any{"enabled": true}},
	}
	live := map[string]any{}
	if got := withoutUnsetDefaults(want, live, defaults, keys); !sameValues(got, live) {
		t.Errorf("the chart's defaults, which the release has, are drift: %v (%s)", got, valuesDiff(got, live))
	}
	want["mayastor"] = map[string]any{"loki-stack": map[string]any{"enabled": false}}
	if got := withoutUnsetDefaults(want, live, defaults, keys); !sameValues(got, live) {
		t.Errorf("the typed setting's default is drift: %v", got)
	}
	live["engines"] = map[string]any{"replicated": map[string]any{"mayastor": map[string]any{"enabled": false}}}
	if got := withoutUnsetDefaults(want, live, defaults, keys); sameValues(got, live) {
		t.Errorf("a key the release sets to another value is not drift: %v (%s)", got, valuesDiff(got, live))
	}
}
