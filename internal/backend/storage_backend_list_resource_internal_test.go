package backend

import (
	"context"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

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

// TestReleaseNames: the releases are those of the Helm release records (owner=helm), one per
// release whatever its number of revisions, sorted, in the namespace asked for or every one; a
// Secret without the labels is not a release.
func TestReleaseNames(t *testing.T) {
	record := func(ns, name string, revision int) *corev1.Secret {
		return &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("sh.helm.release.v1.%s.v%d", name, revision),
				Labels: map[string]string{"owner": "helm", "name": name, "version": fmt.Sprint(revision)}},
			Type: helmReleaseSecretType,
		}
	}
	client := fake.NewClientset(
		record("storage", "openebs", 1), record("storage", "openebs", 2), record("longhorn-system", "longhorn", 1),
		record("storage", "cert-manager", 1),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "storage", Name: "unrelated"}},
	)
	ctx := context.Background()
	all, err := releaseNames(ctx, client, "")
	if err != nil {
		t.Fatal(err)
	}
	if want := [][2]string{{"longhorn-system", "longhorn"}, {"storage", "cert-manager"}, {"storage", "openebs"}}; !slices.Equal(all, want) {
		t.Errorf("every namespace: %v, want %v", all, want)
	}
	one, err := releaseNames(ctx, client, "longhorn-system")
	if err != nil {
		t.Fatal(err)
	}
	if want := [][2]string{{"longhorn-system", "longhorn"}}; !slices.Equal(one, want) {
		t.Errorf("namespace longhorn-system: %v, want %v", one, want)
	}
	for chart, want := range map[string]string{"openebs": typeOpenEBS, "longhorn": typeLonghorn, "cert-manager": "", "": ""} {
		if got := backendType(chart); got != want {
			t.Errorf("backendType(%q) = %q, want %q", chart, got, want)
		}
	}
}
