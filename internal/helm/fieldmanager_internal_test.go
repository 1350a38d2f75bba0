package helm

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

func entry(manager string, op metav1.ManagedFieldsOperationType, subresource, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, APIVersion: "apps/v1", FieldsType: "FieldsV1",
		Subresource: subresource, FieldsV1: metav1.NewFieldsV1(fields)}
}

func TestFormerManager(t *testing.T) {
	for name, want := range map[string]bool{
		kube.FieldManager:                          false,
		"terraform-provider-clusterstorage_v0.0.1": true,
		"terraform-provider-clusterstorage_v1.2.3": true,
		"terraform-provider-clusterstorage.exe":    true,
		"helm":                                     false, // only on adoption (adoptedManager)
		"helm-controller":                          false,
		"kubectl-edit":                             false,
		"terraform-provider-helm_v3.1.2":           false,
	} {
		if got := formerManager(name); got != want {
			t.Errorf("formerManager(%q) = %t, want %t", name, got, want)
		}
	}
}

func TestTakeOverEntries(t *testing.T) {
	apply, update := metav1.ManagedFieldsOperationApply, metav1.ManagedFieldsOperationUpdate
	old := entry("terraform-provider-clusterstorage_v0.0.1", apply, "", `{"f:metadata":{"f:annotations":{"f:a":{},"f:b":{}}}}`)
	older := entry("terraform-provider-clusterstorage_v0.0.0", apply, "", `{"f:spec":{"f:paused":{}}}`)
	cli := entry("helm", apply, "", `{"f:spec":{"f:minReadySeconds":{}}}`)
	ours := entry(kube.FieldManager, apply, "", `{"f:metadata":{"f:annotations":{"f:a":{}}}}`)
	edit := entry("kubectl-edit", update, "", `{"f:spec":{"f:replicas":{}}}`)
	scale := entry("hpa", update, "scale", `{"f:spec":{"f:replicas":{}}}`)
	oldStatus := entry("terraform-provider-clusterstorage_v0.0.1", apply, "status", `{"f:status":{}}`)
	cliUpdate := entry("helm", update, "", `{"f:spec":{"f:paused":{}}}`)
	cliStatus := entry("helm", update, "status", `{"f:status":{}}`)
	for _, tc := range []struct {
		name     string
		in       []metav1.ManagedFieldsEntry
		adopt    bool
		managers []string // of the result, in order
		fields   string   // the provider's entry, "" when none
		from     []string
	}{
		{"nothing to take", []metav1.ManagedFieldsEntry{ours, edit, scale}, false, []string{kube.FieldManager, "kubectl-edit", "hpa"}, `{"f:metadata":{"f:annotations":{"f:a":{}}}}`, nil},
		{"an older build's entry becomes the provider's", []metav1.ManagedFieldsEntry{edit, old, scale}, false,
			[]string{"kubectl-edit", kube.FieldManager, "hpa"}, `{"f:metadata":{"f:annotations":{"f:a":{},"f:b":{}}}}`, []string{old.Manager}},
		{"merged into the provider's entry, the helm CLI's left", []metav1.ManagedFieldsEntry{ours, old, older, cli, edit}, false,
			[]string{kube.FieldManager, "helm", "kubectl-edit"}, `{"f:metadata":{"f:annotations":{"f:a":{},"f:b":{}}},"f:spec":{"f:paused":{}}}`,
			[]string{older.Manager, old.Manager}},
		{"adopted: the helm CLI's entry merged too", []metav1.ManagedFieldsEntry{ours, old, older, cli, edit}, true,
			[]string{kube.FieldManager, "kubectl-edit"}, `{"f:metadata":{"f:annotations":{"f:a":{},"f:b":{}}},"f:spec":{"f:minReadySeconds":{},"f:paused":{}}}`,
			[]string{"helm", older.Manager, old.Manager}},
		{"adopted: the helm CLI's Apply and Update entries become the provider's Apply entry", []metav1.ManagedFieldsEntry{cli, edit, cliUpdate, cliStatus}, true,
			[]string{kube.FieldManager, "kubectl-edit", "helm"}, `{"f:spec":{"f:minReadySeconds":{},"f:paused":{}}}`, []string{"helm"}},
		{"adopted: a client-side install's Update entry alone", []metav1.ManagedFieldsEntry{cliUpdate, scale}, true,
			[]string{kube.FieldManager, "hpa"}, `{"f:spec":{"f:paused":{}}}`, []string{"helm"}},
		{"subresource and Update entries are left", []metav1.ManagedFieldsEntry{oldStatus, cliUpdate}, false,
			[]string{old.Manager, "helm"}, "", nil},
	} {
		got, from, err := takeOverEntries(tc.in, tc.adopt)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var managers []string
		fields := ""
		for _, e := range got {
			managers = append(managers, e.Manager)
			if e.Manager == kube.FieldManager {
				fields = string(e.FieldsV1.GetRawBytes())
				if e.Operation != apply {
					t.Errorf("%s: the provider's entry is %s", tc.name, e.Operation)
				}
			}
		}
		if !slices.Equal(managers, tc.managers) || fields != tc.fields || !slices.Equal(from, tc.from) {
			t.Errorf("%s:\n got managers %q fields %s from %q\nwant managers %q fields %s from %q", tc.name, managers, fields, from, tc.managers, tc.fields, tc.from)
		}
	}
	// The input is left as it was.
	if in := []metav1.ManagedFieldsEntry{old}; func() bool { _, _, _ = takeOverEntries(in, true); return in[0].Manager != old.Manager }() {
		t.Error("takeOverEntries changed its input")
	}
}

func TestTakeOverPatch(t *testing.T) {
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "resourceVersion": "42"}}}
	obj.SetManagedFields([]metav1.ManagedFieldsEntry{entry("terraform-provider-clusterstorage_v0.0.1", metav1.ManagedFieldsOperationApply, "", `{"f:data":{"f:a":{}}}`)})
	patch, from, err := takeOverPatch(obj, false)
	if err != nil || len(from) != 1 {
		t.Fatalf("takeOverPatch: %v %q", err, from)
	}
	var ops []struct {
		Op, Path string
		Value    json.RawMessage
	}
	if err := json.Unmarshal(patch, &ops); err != nil {
		t.Fatal(err)
	}
	if len(ops) != 2 || ops[0].Path != "/metadata/managedFields" || !strings.Contains(string(ops[0].Value), `"manager":"`+kube.FieldManager+`"`) ||
		ops[1].Op != "replace" || ops[1].Path != "/metadata/resourceVersion" || string(ops[1].Value) != `"42"` {
		t.Errorf("patch %s", patch)
	}
	obj.SetManagedFields([]metav1.ManagedFieldsEntry{entry(kube.FieldManager, metav1.ManagedFieldsOperationApply, "", `{"f:data":{}}`)})
	if patch, _, err := takeOverPatch(obj, false); err != nil || patch != nil {
		t.Errorf("nothing to take over: patch %s, %v", patch, err)
	}
}

func TestHeldByOthers(t *testing.T) {
	apply, update := metav1.ManagedFieldsOperationApply, metav1.ManagedFieldsOperationUpdate
	obj := &unstructured.Unstructured{Object: map[string]any{}}
	obj.SetManagedFields([]metav1.ManagedFieldsEntry{
		entry(kube.FieldManager, apply, "", `{"f:spec":{"f:replicas":{}},"f:caBundle":{}}`),
		entry("kubectl-edit", update, "", `{"f:spec":{"f:paused":{}}}`),
		entry("hpa", update, "scale", `{"f:spec":{"f:replicas":{}}}`),
		entry("kube-controller-manager", update, "status", `{"f:status":{"f:conditions":{".":{},"k:{\"type\":\"Available\"}":{"f:status":{}}},"f:replicas":{}}}`),
		entry("cainjector", update, "", `{"f:spec":{"f:conversion":{"f:webhook":{"f:clientConfig":{"f:caBundle":{}}}}},`+
			`"f:webhooks":{"k:{\"name\":\"v.example.com\"}":{"f:clientConfig":{"f:caBundle":{}}}}}`),
		entry("helm", apply, "", `{"f:spec":{"f:caBundle":{}}}`), // the helm CLI applies the chart's own CA bundle: not an injection
	})
	got, err := heldByOthers(obj)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range got {
		names = append(names, strings.Join(p, "."))
	}
	slices.Sort(names)
	want := []string{"spec.conversion.webhook.clientConfig.caBundle", "spec.replicas", "status.conditions.[type=Available].status", "status.replicas",
		"webhooks.[name=v.example.com].clientConfig.caBundle"}
	if !slices.Equal(names, want) {
		t.Errorf("held %q, want %q", names, want)
	}
	m := map[string]any{
		"spec": map[string]any{"replicas": int64(1), "paused": false},
		"webhooks": []any{
			map[string]any{"name": "other", "clientConfig": map[string]any{"caBundle": "a"}},
			map[string]any{"name": "v.example.com", "clientConfig": map[string]any{"caBundle": "b", "url": "u"}},
		},
	}
	removed := withoutHeld(m, got)
	slices.Sort(removed)
	if !slices.Equal(removed, []string{"spec.replicas", "webhooks.[name=v.example.com].clientConfig.caBundle"}) {
		t.Errorf("withoutHeld removed %q", removed)
	}
	want2 := map[string]any{
		"spec": map[string]any{"paused": false},
		"webhooks": []any{
			map[string]any{"name": "other", "clientConfig": map[string]any{"caBundle": "a"}},
			map[string]any{"name": "v.example.com", "clientConfig": map[string]any{"url": "u"}},
		},
	}
	if !reflect.DeepEqual(m, want2) {
		t.Errorf("withoutHeld left %v, want %v", m, want2)
	}
}

func TestLeaveHeldFields(t *testing.T) {
	rendered := `apiVersion: apps/v1
kind: Deployment
metadata:
  name: d
  annotations:
    postrenderer.helm.sh/postrender-filename: templates/d.yaml
spec:
  replicas: 1
  paused: false
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: other
  namespace: elsewhere
spec:
  replicas: 2
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: d
data:
  a: b
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: w
webhooks:
  - name: v.example.com
    clientConfig:
      caBundle: Cg==
      service: {name: s, namespace: ns}
`
	var logged []string
	p := leaveHeldFields{namespace: "ns", log: func(f string, a ...any) { logged = append(logged, f) },
		held: map[objectKey][][]string{
			{"apps", "Deployment", "ns", "d"}:                                           {{"spec", "replicas"}, {"spec", "absent"}},
			{"apps", "Deployment", "ns", "other"}:                                       {{"spec", "replicas"}}, // another namespace
			{"", "ConfigMap", "ns", "missing"}:                                          {{"data"}},
			{"apps", "StatefulSet", "", "cluster-one"}:                                  {{"spec", "replicas"}},
			{"admissionregistration.k8s.io", "ValidatingWebhookConfiguration", "", "w"}: {{"webhooks", "[name=v.example.com]", "clientConfig", "caBundle"}},
		}}
	out, err := p.Run(bytes.NewBufferString(rendered))
	if err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if strings.Count(got, "replicas:") != 1 || !strings.Contains(got, "replicas: 2") || !strings.Contains(got, "paused: false") ||
		!strings.Contains(got, "postrenderer.helm.sh/postrender-filename: templates/d.yaml") || !strings.Contains(got, "a: b") ||
		strings.Contains(got, "caBundle") || !strings.Contains(got, "name: s") {
		t.Errorf("post-rendered:\n%s", got)
	}
	if len(logged) != 2 {
		t.Errorf("logged %d lines, want 2", len(logged))
	}
	if out, err := (leaveHeldFields{}).Run(bytes.NewBufferString(rendered)); err != nil || out.String() != rendered {
		t.Errorf("nothing held: %v\n%s", err, out)
	}
}
