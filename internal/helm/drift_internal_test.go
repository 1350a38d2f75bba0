package helm

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestDiffPaths(t *testing.T) {
	was := map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"app": "a", "tier": "x"}},
		"spec":     map[string]any{"replicas": int64(1), "ports": []any{int64(80)}, "same": "s"},
	}
	for _, tc := range []struct {
		name string
		is   map[string]any
		want []string
	}{
		{"equal", was, nil},
		{"changed, added and removed fields, in order", map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"app": "b", "new": "n"}},
			"spec":     map[string]any{"replicas": int64(1), "ports": []any{int64(80)}, "same": "s"},
		}, []string{"metadata.labels.app", "metadata.labels.new", "metadata.labels.tier"}},
		{"a list is named as a whole", map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"app": "a", "tier": "x"}},
			"spec":     map[string]any{"replicas": int64(1), "ports": []any{int64(81)}, "same": "s"},
		}, []string{"spec.ports"}},
		{"at most three paths", map[string]any{"a": 1, "b": 2, "c": 3, "d": 4}, []string{"a", "b", "c"}},
	} {
		if got := diffPaths("", was, tc.is, nil); !slices.Equal(got, tc.want) {
			t.Errorf("%s: diffPaths = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestWithoutWriteFields(t *testing.T) {
	class := func(ann map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
			"metadata": map[string]any{
				"name": "c", "resourceVersion": "7", "generation": int64(2),
				"managedFields": []any{"m"}, "annotations": ann,
			},
			"provisioner": "p",
		}}
	}
	got := withoutWriteFields(class(map[string]any{
		"storageclass.kubernetes.io/is-default-class":      "true",
		"storageclass.beta.kubernetes.io/is-default-class": "true",
		"keep": "k",
	}))
	want := withoutWriteFields(class(map[string]any{"keep": "k"}))
	if p := diffPaths("", got, want, nil); p != nil {
		t.Errorf("the default-class marks counted: %q", p)
	}
	meta := object(t, got, "metadata")
	for _, k := range []string{"resourceVersion", "generation", "managedFields"} {
		if _, ok := meta[k]; ok {
			t.Errorf("metadata.%s kept", k)
		}
	}
	if meta := object(t, withoutWriteFields(class(map[string]any{"storageclass.kubernetes.io/is-default-class": "true"})), "metadata"); meta["annotations"] != nil {
		t.Errorf("annotations left empty rather than removed: %v", meta["annotations"])
	}
	pod := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod", "status": map[string]any{"phase": "Running"},
		"metadata": map[string]any{"annotations": map[string]any{"storageclass.kubernetes.io/is-default-class": "true"}},
	}}
	c := withoutWriteFields(pod)
	if _, ok := c["status"]; ok {
		t.Error("status kept")
	}
	if object(t, c, "metadata")["annotations"] == nil {
		t.Error("a Pod's annotations were taken for a class's default marks")
	}
}

// object returns m[key], which must be a map.
func object(t *testing.T, m map[string]any, key string) map[string]any {
	t.Helper()
	v, ok := m[key].(map[string]any)
	if !ok {
		t.Fatalf("%s is a %T, not a map", key, m[key])
	}
	return v
}

func TestDriftCheckError(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "d",
		errors.New(`User "reader" cannot patch resource "deployments" in API group "apps" in the namespace "ns"`))
	webhook := errors.New(`admission webhook "inject.example.com" does not support dry run`)
	err := &DriftCheckError{Failures: []ObjectCheckFailure{
		{Object: "Deployment/ns/d", Resource: "deployments.apps", Namespace: "ns", Err: fmt.Errorf("a dry run of applying Deployment/ns/d: %w", forbidden)},
		{Object: "StorageClass/c", Resource: "storageclasses.storage.k8s.io", Err: webhook},
		{Object: "ConfigMap/ns/x", Resource: "configmaps", Namespace: "ns", Err: errors.New("boom")},
	}}
	msg := err.Error()
	for _, want := range []string{
		"3 object(s) could not be checked for drift",
		"Deployment/ns/d: the provider's credentials may not read or dry-run patch it",
		"needs get and patch on deployments.apps in namespace ns",
		"StorageClass/c: an admission webhook refuses dry runs",
		"sideEffects are None or NoneOnDryRun",
		"ConfigMap/ns/x: boom",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the message lacks %q:\n%s", want, msg)
		}
	}
}
