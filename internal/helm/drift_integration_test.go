package helm_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/helm"
)

// longhornKinds are the 25 custom resources the real Longhorn 1.12.1 chart installs (its
// templates/crds.yaml), by plural: the drift fixture has as many CRDs, each with a schema of
// some size, as the real ones have (theirs are larger).
var longhornKinds = []string{
	"backingimagedatasources", "backingimagemanagers", "backingimages", "backupbackingimages",
	"backups", "backuptargets", "backupvolumes", "dataengineupgrademanagers", "engineimages",
	"engines", "instancemanagers", "nodedataengineupgrades", "nodes", "orphans", "recurringjobs",
	"replicas", "settings", "sharemanagers", "snapshots", "supportbundles", "systembackups",
	"systemrestores", "volumeattachments", "volumes", "upgrades",
}

// driftSizeChart is a chart of the size of Longhorn 1.12.1's render (about 45 objects): 25 CRDs
// (group <group>, made for the run) and 20 other objects as the real chart has them (service
// accounts, RBAC, its ConfigMaps, a PriorityClass, five Services, the manager DaemonSet and two
// Deployments). No pod runs: the DaemonSet selects no node and the Deployments have no replica.
func driftSizeChart(group string) *chart.Chart {
	var crds strings.Builder
	for _, plural := range longhornKinds {
		kind := strings.TrimSuffix(plural, "s")
		fmt.Fprintf(&crds, `---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %[1]s.%[2]s
  labels: {app.kubernetes.io/name: longhorn}
spec:
  group: %[2]s
  scope: Namespaced
  names: {plural: %[1]s, singular: %[3]s, kind: %[4]s, listKind: %[4]sList}
  versions:
  - name: v1beta2
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
`, plural, group, kind, strings.ToUpper(kind[:1])+kind[1:])
		for i := range 30 {
			fmt.Fprintf(&crds, "              field%02d: {type: string, description: \"a field of the %s spec, as long as the real descriptions tend to be\"}\n", i, kind)
		}
		crds.WriteString("          status: {type: object, x-kubernetes-preserve-unknown-fields: true}\n")
	}
	objects := `{{- $p := printf "%s-%s" .Release.Namespace "longhorn" }}
{{- range list "longhorn-service-account" "longhorn-ui-service-account" "longhorn-support-bundle" }}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: {{ . }}}
{{- end }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: {{ $p }}-role}
rules:
- {apiGroups: [""], resources: [pods, nodes, configmaps], verbs: [get, list, watch]}
{{- range list "bind" "support-bundle" }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: {{ $p }}-{{ . }}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: {{ $p }}-role}
subjects: [{kind: ServiceAccount, name: longhorn-service-account, namespace: {{ $.Release.Namespace }}}]
{{- end }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: longhorn-psp-role}
rules: [{apiGroups: [""], resources: [secrets], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: longhorn-psp-binding}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: longhorn-psp-role}
subjects: [{kind: ServiceAccount, name: longhorn-service-account, namespace: {{ .Release.Namespace }}}]
{{- range list "longhorn-default-setting" "longhorn-default-resource" "longhorn-storageclass" }}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: {{ . }}}
data:
  default-setting.yaml: |-
    priority-class: longhorn-critical
    disable-revision-counter: "{\"v1\":\"true\"}"
{{- end }}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: {{ $p }}-critical}
value: 1000000000
globalDefault: false
{{- range list "longhorn-backend" "longhorn-frontend" "longhorn-conversion-webhook" "longhorn-admission-webhook" "longhorn-recovery-backend" }}
---
apiVersion: v1
kind: Service
metadata: {name: {{ . }}, labels: {app: {{ . }}}}
spec:
  type: ClusterIP
  selector: {app: {{ . }}}
  ports: [{name: http, port: 9500, targetPort: 9500}]
{{- end }}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: longhorn-manager}
spec:
  selector: {matchLabels: {app: longhorn-manager}}
  template:
    metadata: {labels: {app: longhorn-manager}}
    spec:
      serviceAccountName: longhorn-service-account
      nodeSelector: {clusterstorage.io/drift-fixture: none}
      containers:
      - {name: longhorn-manager, image: localhost/clusterstorage/busybox:1, imagePullPolicy: Never, command: [sleep, "3600"]}
{{- range list "longhorn-driver-deployer" "longhorn-ui" }}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: {{ . }}}
spec:
  replicas: 0
  selector: {matchLabels: {app: {{ . }}}}
  template:
    metadata: {labels: {app: {{ . }}}}
    spec:
      containers:
      - {name: main, image: localhost/clusterstorage/busybox:1, imagePullPolicy: Never, command: [sleep, "3600"]}
{{- end }}
`
	return &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: "v2", Name: "drift-size", Version: "1.12.1"},
		Values:   map[string]any{},
		Templates: []*common.File{
			{Name: "templates/crds.yaml", Data: []byte(crds.String())},
			{Name: "templates/objects.yaml", Data: []byte(objects)},
		},
	}
}

// driftRelease installs the drift fixture into a namespace of its own (removed, with the
// release and its CRDs, at the end) and returns the client and the release.
func driftRelease(tb testing.TB) (*helm.Client, kubernetes.Interface, *helm.Status) {
	tb.Helper()
	path := os.Getenv("KUBECONFIG")
	if path == "" {
		if os.Getenv("CI") != "" {
			tb.Fatal("KUBECONFIG is not set: CI starts the cluster, a missing one is a broken test bed")
		}
		tb.Skip("KUBECONFIG is not set: this installs a release into a real cluster (tools/kube/cluster.sh up)")
	}
	rc, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		tb.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := helm.New(rc, helm.Options{CacheDir: tb.TempDir(), Owner: testOwner})
	if err != nil {
		tb.Fatal(err)
	}
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	ns := "it-drift-" + hex.EncodeToString(b)
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := c.Uninstall(ctx, "longhorn", ns, helm.UninstallOptions{Wait: true, Timeout: time.Minute, DisableHooks: true}); err != nil && !strings.Contains(err.Error(), "not found") {
			tb.Logf("cleanup: %v", err)
		}
		if err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			tb.Logf("cleanup: deleting namespace %s: %v", ns, err)
		}
	})
	ctx := context.Background()
	st, err := c.Install(ctx, helm.Release{Name: "longhorn", Namespace: ns, CreateNamespace: true, Chart: driftSizeChart(ns + ".drift.clusterstorage.io"), Timeout: 2 * time.Minute})
	if err != nil {
		tb.Fatal(err)
	}
	objs, err := st.Objects()
	if err != nil {
		tb.Fatal(err)
	}
	if len(objs) != 45 {
		tb.Fatalf("the drift fixture renders %d objects, want Longhorn 1.12.1's 45", len(objs))
	}
	// The API server writes each new CRD's status (Established, NamesAccepted) shortly after
	// the install: wait for those writes, which change the resourceVersions.
	deadline := time.Now().Add(time.Minute)
	for _, plural := range longhornKinds {
		for {
			crd, err := apiextensionsGet(ctx, rc, plural+"."+ns+".drift.clusterstorage.io")
			if err == nil && crd {
				break
			}
			if time.Now().After(deadline) {
				tb.Fatalf("CRD %s not established: %v", plural, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return c, cs, st
}

// TestIntegrationDriftCache: a refresh of a release of Longhorn 1.12.1's size reuses the answers
// of the last one for objects whose resourceVersion did not change (a tampered cache entry at
// the live resourceVersion comes back as it is: no dry run was made), and still sees a change
// another actor made between the two (that object's resourceVersion moved).
func TestIntegrationDriftCache(t *testing.T) {
	c, cs, st := driftRelease(t)
	ctx := context.Background()
	start := time.Now()
	drift, cold, err := c.ObjectDriftCached(ctx, st, nil)
	coldTime := time.Since(start)
	if err != nil || len(drift) != 0 {
		t.Fatalf("fresh release: drift %q (%v)", drift, err)
	}
	if len(cold.Objects) != 45 {
		t.Fatalf("the cache holds %d objects, want 45", len(cold.Objects))
	}
	start = time.Now()
	drift, warm, err := c.ObjectDriftCached(ctx, st, cold)
	warmTime := time.Since(start)
	if err != nil || len(drift) != 0 {
		t.Fatalf("unchanged release: drift %q (%v)", drift, err)
	}
	t.Logf("drift check of 45 objects: %v without a cache, %v with the last refresh's", coldTime, warmTime)

	// Reuse: an entry at the live resourceVersion is taken as it is.
	svc := "Service/" + st.Namespace + "/longhorn-frontend"
	entry, ok := warm.Objects[svc]
	if !ok {
		t.Fatalf("no cache entry for %s", svc)
	}
	entry.Paths = []string{"from.the.cache"}
	warm.Objects[svc] = entry
	drift, next, err := c.ObjectDriftCached(ctx, st, warm)
	if err != nil || !slices.Equal(drift, []string{svc + " (from.the.cache)"}) {
		t.Fatalf("with a tampered entry at the live resourceVersion: drift %q (%v), want the cached answer", drift, err)
	}

	// Another actor changes a field the chart sets: that object's resourceVersion moves, it is
	// checked again, and its drift is seen, while the untouched ones still come from the cache.
	cm := "longhorn-default-setting"
	if _, err := cs.CoreV1().ConfigMaps(st.Namespace).Patch(ctx, cm, types.MergePatchType,
		[]byte(`{"data":{"default-setting.yaml":"priority-class: edited"}}`), metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	drift, _, err = c.ObjectDriftCached(ctx, st, next)
	want := []string{"ConfigMap/" + st.Namespace + "/" + cm + " (data.default-setting.yaml)", svc + " (from.the.cache)"}
	if err != nil || !slices.Equal(drift, want) {
		t.Fatalf("after an out-of-band edit: drift %q (%v), want %q", drift, err, want)
	}
	// A cache of another revision's manifest is not used.
	other := *st
	other.Manifest += "\n"
	if drift, _, err := c.ObjectDriftCached(ctx, &other, next); err != nil || !slices.Equal(drift, want[:1]) {
		t.Fatalf("another manifest: drift %q (%v), want only the edit", drift, err)
	}
}

// BenchmarkDriftRefresh measures the drift check of a refresh of a release of Longhorn 1.12.1's
// size (45 objects, 25 CRDs) on the local cluster: sequential-cold (one object at a time, no
// cache: the check before issue 40), cold (no cache: every object read and dry-run, 8 at a
// time), after-apply (the install's own cache, helm.Status.Applied: the objects written since,
// the CRDs' status by the API server, dry-run) and warm (the last refresh's cache: every object
// read, none dry-run).
// make bench runs it (scripts/bench-backend.sh).
func BenchmarkDriftRefresh(b *testing.B) {
	c, _, st := driftRelease(b)
	ctx := context.Background()
	_, cache, err := c.ObjectDriftCached(ctx, st, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("sequential-cold", func(b *testing.B) { // the check before: one object at a time, no cache
		defer helm.SetDriftParallel(1)()
		for b.Loop() {
			if _, _, err := c.ObjectDriftCached(ctx, st, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := c.ObjectDriftCached(ctx, st, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("after-apply", func(b *testing.B) { // the first refresh after the install: its own cache
		for b.Loop() {
			if _, _, err := c.ObjectDriftCached(ctx, st, st.Applied); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("warm", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := c.ObjectDriftCached(ctx, st, cache); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// apiextensionsGet reports whether the CRD name is Established.
func apiextensionsGet(ctx context.Context, rc *rest.Config, name string) (bool, error) {
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return false, err
	}
	u, err := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}).
		Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, err
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == "Established" && m["status"] == "True" {
			return true, nil
		}
	}
	return false, nil
}

// TestIntegrationDriftCacheFromApply: the install's own answer (helm.Status.Applied: each object at
// the resourceVersion the apply left it at, without drift) serves the first drift check after it
// for the objects nobody wrote since (a tampered entry comes back as it is: no dry run was made),
// while a change another actor made right after the install is seen, and so are the objects a
// controller wrote since (the CRDs' status: their resourceVersions moved, so they are checked).
func TestIntegrationDriftCacheFromApply(t *testing.T) {
	c, cs, st := driftRelease(t)
	ctx := context.Background()
	if st.Applied == nil || len(st.Applied.Objects) < 45 {
		t.Fatalf("the install's drift cache: %+v, want an entry for each of the 45 objects", st.Applied)
	}
	applied := func() *helm.DriftCache {
		cp := *st.Applied
		cp.Objects = maps.Clone(st.Applied.Objects)
		return &cp
	}
	svc := "Service/" + st.Namespace + "/longhorn-frontend"
	tampered := applied()
	entry, ok := tampered.Objects[svc]
	if !ok {
		t.Fatalf("no entry for %s in the install's cache", svc)
	}
	entry.Paths = []string{"from.the.apply"}
	tampered.Objects[svc] = entry
	drift, next, err := c.ObjectDriftCached(ctx, st, tampered)
	if err != nil || !slices.Equal(drift, []string{svc + " (from.the.apply)"}) {
		t.Fatalf("first check after the install: drift %q (%v), want only the tampered entry", drift, err)
	}
	if len(next.Objects) != 45 {
		t.Fatalf("the next cache holds %d objects, want 45", len(next.Objects))
	}

	// Changed right after the apply, before any refresh: the resourceVersion moved, so it is checked.
	cm := "longhorn-default-setting"
	if _, err := cs.CoreV1().ConfigMaps(st.Namespace).Patch(ctx, cm, types.MergePatchType,
		[]byte(`{"data":{"default-setting.yaml":"priority-class: edited"}}`), metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	drift, _, err = c.ObjectDriftCached(ctx, st, applied())
	want := []string{"ConfigMap/" + st.Namespace + "/" + cm + " (data.default-setting.yaml)"}
	if err != nil || !slices.Equal(drift, want) {
		t.Fatalf("after an edit right after the install: drift %q (%v), want %q", drift, err, want)
	}
}
