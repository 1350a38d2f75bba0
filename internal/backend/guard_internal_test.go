package backend

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/helm"
)

func TestInternalClaims(t *testing.T) {
	st := &helm.Status{Namespace: "openebs", Manifest: `apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: openebs-etcd
spec:
  volumeClaimTemplates:
    - metadata:
        name: data
`}
	internal, err := internalClaims(st)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ns, name string
		want     bool
	}{
		{"openebs", "data-openebs-etcd-0", true},
		{"openebs", "data-openebs-etcd-12", true},
		{"default", "data-openebs-etcd-0", false}, // another namespace: a user's claim
		{"openebs", "data-openebs-etcd-x", false},
		{"openebs", "data-openebs-etcd-0-copy", false},
		{"openebs", "mydata-openebs-etcd-0", false},
	} {
		if got := internal(c.ns, c.name); got != c.want {
			t.Errorf("%s/%s internal = %t, want %t", c.ns, c.name, got, c.want)
		}
	}
}

func TestGuardedVolumeString(t *testing.T) {
	v := guardedVolume{Kind: "PersistentVolume", Name: "pvc-1", Driver: "driver.longhorn.io", State: "Released", Reclaim: "Retain",
		Claim: "apps/data (deleted)", Class: "longhorn-single-replica"}
	want := "PersistentVolume pvc-1 (driver.longhorn.io, Released, reclaim Retain): claim apps/data (deleted), class longhorn-single-replica"
	if got := v.String(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	v.MigratedTo = "apps/data pvc-2"
	want += "; the source volume a clusterstorage_volume_migration of claim apps/data kept (the claim is on pvc-2 now): " +
		"set delete_source = true on that migration to delete it"
	if got := v.String(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if got := (guardedVolume{Kind: "Longhorn volume", Name: "longhorn-system/vol", State: "detached"}).String(); got != "Longhorn volume longhorn-system/vol (detached): no claim, no class" {
		t.Errorf("got %q", got)
	}
}

// TestApplyFailure: one builder says what happened for each operation.
func TestApplyFailure(t *testing.T) {
	s := spec{Type: typeOpenEBS, Namespace: "openebs", ReleaseName: "openebs", Wait: true}
	waitErr := errors.New("context deadline exceeded")
	cases := []struct {
		op     string
		left   *helm.Status
		getErr error
		want   []string
	}{
		{opInstall, nil, helm.ErrNotFound, []string{"waited up to 1m0s", "timeouts.create", "removed again (atomic install)"}},
		{opInstall, &helm.Status{Revision: 1, Status: "failed", ChartVersion: "4.3.0"}, nil, []string{"revision 1 (failed, chart 4.3.0); the next apply replaces it."}},
		{opUpgrade, &helm.Status{Revision: 3, Status: "deployed", ChartVersion: "4.3.0"}, nil, []string{"timeouts.update", "revision 3 (deployed, chart 4.3.0): a failed upgrade is rolled back."}},
		{opUpgrade, nil, errors.New("forbidden"), []string{"could not be read: forbidden"}},
		{opUninstall, nil, nil, []string{"stays in state", "helm status openebs -n openebs"}},
	}
	for _, c := range cases {
		got := applyFailure(c.op, s, time.Minute, waitErr, c.left, c.getErr)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q does not say %q", c.op, got, w)
			}
		}
		if c.op == opUninstall && strings.Contains(got, "waited up to") {
			t.Errorf("uninstall: %q talks about waiting for workloads", got)
		}
	}
	lh := s
	lh.Type = typeLonghorn
	if got := applyFailure(opUninstall, lh, time.Minute, errors.New("hook failed"), nil, nil); !strings.Contains(got, "logs job/longhorn-uninstall") {
		t.Errorf("longhorn uninstall: %q", got)
	}
}

// TestWithoutUnsetDefaults: after an import of a release installed with the chart's defaults,
// the typed settings render keys the release does not set; those at their default (the typed
// setting's, else the chart's) are not drift, a value that differs from it is, and so is a key
// the release sets.
func TestWithoutUnsetDefaults(t *testing.T) {
	keys := []valueKey{
		{Setting: "default_class", Key: "persistence.defaultClass", Default: true},
		{Setting: "default_replica_count", Key: "persistence.defaultClassReplicaCount", Default: 3},
		{Setting: "default_replica_count", Key: "defaultSettings.defaultReplicaCount", AsString: true},
		{Setting: "default_data_path", Key: "defaultSettings.defaultDataPath", AsString: true},
	}
	// The chart's defaults for these are null; the typed settings' defaults render them.
	defaults := map[string]any{"defaultSettings": map[string]any{"defaultReplicaCount": "3", "defaultDataPath": "/var/lib/longhorn/"}}
	settings := map[string]any{"defaultReplicaCount": "3", "defaultDataPath": "/var/lib/longhorn/"}
	want := map[string]any{
		"persistence":     map[string]any{"defaultClass": false, "defaultClassReplicaCount": 3},
		"defaultSettings": settings,
	}
	persistence := map[string]any{"defaultClass": false}
	live := map[string]any{"persistence": persistence}
	if got := withoutUnsetDefaults(want, live, defaults, keys); !sameValues(got, live) {
		t.Errorf("defaults the release does not set are drift: %v", got)
	}
	if _, ok := want["defaultSettings"]; !ok {
		t.Error("want itself was changed")
	}
	settings["defaultDataPath"] = "/mnt/longhorn/"
	if got := withoutUnsetDefaults(want, live, defaults, keys); sameValues(got, live) || valuesDiff(got, live) != "- defaultSettings" {
		t.Errorf("a setting other than the default is drift: %v (%s)", got, valuesDiff(got, live))
	}
	persistence["defaultClassReplicaCount"] = 2
	if got := withoutUnsetDefaults(want, live, defaults, keys); sameValues(got, live) {
		t.Errorf("a key the release sets to another value is drift: %v", got)
	}
}
