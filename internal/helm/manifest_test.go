package helm

import (
	"reflect"
	"testing"
)

const testManifest = `---
# Source: openebs/charts/localpv-provisioner/templates/rbac.yaml
apiVersion: v1
kind: ServiceAccount
metadata:
  name: openebs-localpv-provisioner
---
# Source: openebs/charts/localpv-provisioner/templates/hostpath-class.yaml
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: openebs-hostpath
provisioner: openebs.io/local
---
# Source: empty.yaml
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: openebs-io-engine
  namespace: other
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: openebs-localpv-provisioner
---
apiVersion: v1
kind: List
items:
- apiVersion: apps/v1
  kind: StatefulSet
  metadata:
    name: openebs-loki
- apiVersion: storage.k8s.io/v1
  kind: StorageClass
  metadata:
    name: mayastor-single-replica
---
apiVersion: batch/v1
kind: Job
metadata:
  name: once
---
apiVersion: example.com/v1
kind: Deployment
metadata:
  name: not-apps
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: longhorn-storageclass
data:
  storageclass.yaml: |
    kind: StorageClass
    apiVersion: storage.k8s.io/v1
    metadata:
      name: longhorn
    provisioner: driver.longhorn.io
  other: "not: [yaml"
---
kind: StorageClass
apiVersion: storage.k8s.io/v1
metadata:
  name: longhorn
provisioner: driver.longhorn.io
`

func TestParseManifest(t *testing.T) {
	objs, err := ParseManifest(testManifest)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, o.String())
	}
	want := []string{
		"ServiceAccount/openebs-localpv-provisioner",
		"StorageClass/openebs-hostpath",
		"DaemonSet/other/openebs-io-engine",
		"Deployment/openebs-localpv-provisioner",
		"StatefulSet/openebs-loki",
		"StorageClass/mayastor-single-replica",
		"Job/once",
		"Deployment/not-apps",
		"ConfigMap/longhorn-storageclass",
		"StorageClass/longhorn",
		"StorageClass/longhorn",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %q\nwant %q", got, want)
	}

	if got, want := StorageClasses(objs), []string{"openebs-hostpath", "mayastor-single-replica", "longhorn"}; !reflect.DeepEqual(got, want) {
		t.Errorf("StorageClasses = %q, want %q", got, want)
	}
	var wl []string
	for _, o := range Workloads(objs, "openebs") {
		wl = append(wl, o.String())
	}
	if want := []string{"DaemonSet/other/openebs-io-engine", "Deployment/openebs/openebs-localpv-provisioner", "StatefulSet/openebs/openebs-loki"}; !reflect.DeepEqual(wl, want) {
		t.Errorf("Workloads = %q, want %q", wl, want)
	}
	if objs[9].EmbeddedIn != "ConfigMap/longhorn-storageclass" || objs[10].EmbeddedIn != "" {
		t.Errorf("EmbeddedIn: %+v %+v", objs[9], objs[10])
	}
	if !objs[6].IsWorkload() || objs[1].IsWorkload() || objs[7].IsWorkload() {
		t.Error("IsWorkload misclassifies")
	}
}

func TestParseManifestEmptyAndErrors(t *testing.T) {
	objs, err := ParseManifest("")
	if err != nil || len(objs) != 0 {
		t.Fatalf("empty manifest: %v %v", objs, err)
	}
	if _, err := ParseManifest("apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n"); err == nil {
		t.Error("a document without a name should fail")
	}
	if _, err := ParseManifest("apiVersion: v1\nkind: [\n"); err == nil {
		t.Error("invalid YAML should fail")
	}
}

func TestClaimTemplates(t *testing.T) {
	manifest := `---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: openebs-etcd
spec:
  volumeClaimTemplates:
    - metadata:
        name: data
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: loki
  namespace: logs
spec:
  volumeClaimTemplates:
    - metadata:
        name: storage
    - metadata:
        name: wal
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: no-claims
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data-openebs-etcd-0
`
	got, err := ClaimTemplates(manifest, "openebs")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"openebs/openebs-etcd": {"data"}, "logs/loki": {"storage", "wal"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if _, err := ClaimTemplates("kind: [", "x"); err == nil {
		t.Error("a broken manifest must be an error")
	}
}
