package backend

import (
	"slices"
	"testing"
)

// TestReleaseDrivers: the drivers a release serves are its type's fixed list and what its own
// manifest installs: CSIDriver objects and the provisioners of its StorageClasses, those in a
// ConfigMap (Longhorn's longhorn-storageclass) and in a List included, a class of static volumes
// (kubernetes.io/no-provisioner) left out; each once, sorted.
func TestReleaseDrivers(t *testing.T) {
	manifest := `---
# Source: openebs/charts/new-engine/templates/csidriver.yaml
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata:
  name: new.csi.example.com
spec:
  attachRequired: false
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: fast
provisioner: fast.example.com/provisioner
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: openebs-hostpath
provisioner: openebs.io/local
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: static-local
provisioner: kubernetes.io/no-provisioner
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: vendor-storageclass
data:
  storageclass.yaml: |
    kind: StorageClass
    apiVersion: storage.k8s.io/v1
    metadata:
      name: vendor
    provisioner: vendor.csi.example.com
  notes.txt: "a StorageClass is made from this: not YAML {"
---
apiVersion: v1
kind: List
items:
  - apiVersion: storage.k8s.io/v1
    kind: CSIDriver
    metadata:
      name: listed.csi.example.com
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: controller
spec: {}
`
	got, err := releaseDrivers(typeOpenEBS, manifest)
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(backendDrivers[typeOpenEBS])
	want = append(want, "new.csi.example.com", "fast.example.com/provisioner", "vendor.csi.example.com", "listed.csi.example.com")
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("releaseDrivers:\n got %q\nwant %q", got, want)
	}

	// Nothing in the manifest: the fixed list.
	if got, err := releaseDrivers(typeLonghorn, ""); err != nil || !slices.Equal(got, []string{longhornDriver}) {
		t.Errorf("an empty manifest: %q, %v", got, err)
	}
	if _, err := releaseDrivers(typeLonghorn, "kind: [unclosed"); err == nil {
		t.Error("an unreadable manifest is no error")
	}
}
