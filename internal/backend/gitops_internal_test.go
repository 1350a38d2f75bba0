package backend

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestGitOpsOwners(t *testing.T) {
	obj := func(kind, ns, name string, labels, annotations map[string]string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": kind}}
		u.SetNamespace(ns)
		u.SetName(name)
		u.SetLabels(labels)
		u.SetAnnotations(annotations)
		return u
	}
	helmOnly := obj("Deployment", "openebs", "d", map[string]string{instanceLabel: "openebs", "app.kubernetes.io/managed-by": "Helm"}, nil)
	for _, tc := range []struct {
		name    string
		release map[string]string
		objs    []*unstructured.Unstructured
		want    []string // tool, owner, objects, marks
	}{
		{"Helm's own marks only", nil, []*unstructured.Unstructured{helmOnly}, nil},
		{"Flux on objects", nil, []*unstructured.Unstructured{helmOnly,
			obj("Deployment", "openebs", "a", map[string]string{fluxNameLabel: "openebs", fluxNamespaceLabel: "flux-system"}, nil),
			obj("StorageClass", "", "c", map[string]string{fluxNameLabel: "openebs", fluxNamespaceLabel: "flux-system"}, nil)},
			[]string{"Flux|HelmRelease flux-system/openebs|Deployment/openebs/a,StorageClass/c|" + fluxNameLabel + "," + fluxNamespaceLabel}},
		{"Flux on the release", map[string]string{fluxNameLabel: "openebs", fluxNamespaceLabel: "flux-system"}, nil,
			[]string{"Flux|HelmRelease flux-system/openebs|the release's storage Secret (its Helm release labels)|" + fluxNameLabel + "," + fluxNamespaceLabel}},
		{"Argo CD's annotation", nil, []*unstructured.Unstructured{
			obj("Deployment", "openebs", "a", nil, map[string]string{argoTrackingID: "argocd_storage:apps/Deployment:openebs/a"})},
			[]string{"Argo CD|Application argocd/storage|Deployment/openebs/a|" + argoTrackingID}},
		{"Argo CD's label with its marks", nil, []*unstructured.Unstructured{helmOnly,
			obj("Deployment", "openebs", "a", map[string]string{instanceLabel: "storage"}, map[string]string{"argocd.argoproj.io/sync-options": "Prune=false"})},
			[]string{"Argo CD|Application storage|Deployment/openebs/a|argocd.argoproj.io/sync-options," + instanceLabel}},
	} {
		var got []string
		for _, o := range gitOpsOwners(tc.release, tc.objs) {
			got = append(got, strings.Join([]string{o.tool, o.owner, strings.Join(o.objects, ","), strings.Join(o.marks, ",")}, "|"))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
	detail := gitOpsDetail("openebs/openebs", &gitOpsOwner{tool: "Flux", owner: "HelmRelease flux-system/openebs",
		objects: []string{"a", "b", "c", "d", "e"}, marks: []string{fluxNameLabel}}, "importing")
	for _, want := range []string{"Flux HelmRelease flux-system/openebs manages release openebs/openebs", "on a, b, c and 2 more", "flux suspend helmrelease", fluxNameLabel, "by importing it"} {
		if !strings.Contains(detail, want) {
			t.Errorf("detail lacks %q:\n%s", want, detail)
		}
	}
}
