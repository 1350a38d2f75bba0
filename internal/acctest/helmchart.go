package acctest

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

// HelmChartGVR is k3s's HelmChart kind, through which its helm-controller installs charts.
var HelmChartGVR = schema.GroupVersionResource{Group: "helm.cattle.io", Version: "v1", Resource: "helmcharts"}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// InstallHelmChartCRD makes sure the cluster serves k3s's HelmChart kind until the test ends. A
// k3s cluster has it; the local cluster has no helm-controller, so the test installs a CRD with
// the real one's identity (read from k3s-io/helm-controller, pkg/crds/yaml/generated/
// helm.cattle.io_helmcharts.yaml: group helm.cattle.io, version v1, kind HelmChart, plural
// helmcharts, short name hc, namespaced, a status subresource) and a schema that keeps every
// field (the real one lists spec's fields: chart, chartContent, targetNamespace... all strings,
// which is all the provider reads). No controller acts on the objects. Holds LockHelmChartCRD; a
// CRD it made is removed at the end, one that was there is left alone.
func InstallHelmChartCRD(t *testing.T, dyn dynamic.Interface) {
	t.Helper()
	LockCluster(t, Kube(t), LockHelmChartCRD)
	ctx := context.Background()
	const name = "helmcharts.helm.cattle.io"
	if _, err := dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{}); err == nil {
		return
	} else if !kube.IsNotFound(err) {
		t.Fatal(err)
	}
	keep := map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": name},
		"spec": map[string]any{
			"group": "helm.cattle.io",
			"names": map[string]any{"kind": "HelmChart", "listKind": "HelmChartList", "plural": "helmcharts", "singular": "helmchart", "shortNames": []any{"hc"}},
			"scope": "Namespaced",
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"subresources": map[string]any{"status": map[string]any{}},
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type":       "object",
					"properties": map[string]any{"spec": keep, "status": keep},
				}},
			}},
		},
	}}
	if _, err := dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		if err := dyn.Resource(crdGVR).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !kube.IsNotFound(err) {
			t.Errorf("removing the HelmChart CRD: %v", err)
			return
		}
		// Gone before the lock is released: the next holder must not find it terminating.
		err := kube.Poll(ctx, 200*time.Millisecond, time.Minute, "the HelmChart CRD to be gone", func(ctx context.Context) (bool, string, error) {
			_, err := dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
			if kube.IsNotFound(err) {
				return true, "", nil
			}
			return false, "still there", nil
		})
		if err != nil {
			t.Error(err)
		}
	})
	// Served once a list of the kind answers.
	err := kube.Poll(ctx, 100*time.Millisecond, time.Minute, "the HelmChart kind to be served", func(ctx context.Context) (bool, string, error) {
		_, err := dyn.Resource(HelmChartGVR).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, fmt.Sprint(err), nil // not served yet: the list fails until it is
	})
	if err != nil {
		t.Fatal(err)
	}
}
