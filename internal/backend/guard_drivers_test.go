package backend

import (
	"slices"
	"strings"
	"testing"
)

// driversManifest is an OpenEBS release's manifest as Helm records it (each object under the
// "# Source:" of its template): a CSIDriver of an engine the table does not list, in the LVM
// subchart; Mayastor's etcd class on the hostpath provisioner beside its own class; the hostpath
// class of localpv-provisioner; classes of the chart's own templates (one of static volumes);
// a ConfigMap with a class for an operator to make and a List with a CSIDriver.
const driversManifest = `---
# Source: openebs/charts/lvm-localpv/templates/csidriver.yaml
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata:
  name: new.csi.example.com
spec:
  attachRequired: false
---
# Source: openebs/charts/lvm-localpv/templates/daemonset.yaml
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: lvm-node
spec: {}
---
# Source: openebs/charts/mayastor/charts/etcd/templates/localpv-storageclass.yaml
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: mayastor-etcd-localpv
provisioner: openebs.io/local
---
# Source: openebs/charts/mayastor/templates/storageclass.yaml
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: openebs-single-replica
provisioner: io.openebs.csi-mayastor
---
# Source: openebs/charts/localpv-provisioner/templates/hostpath-class.yaml
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: openebs-hostpath
provisioner: openebs.io/local
---
# Source: openebs/templates/classes.yaml
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: fast
provisioner: fast.example.com/provisioner
---
# Source: openebs/templates/classes.yaml
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: static-local
provisioner: kubernetes.io/no-provisioner
---
# Source: openebs/templates/vendor.yaml
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
# Source: openebs/charts/zfs-localpv/templates/empty.yaml
`

// TestReleaseDrivers: the drivers a release serves are its type's fixed list and what its own
// manifest installs: CSIDriver objects and the provisioners of its StorageClasses, those in a
// ConfigMap (Longhorn's longhorn-storageclass) and in a List included, a class of static volumes
// (kubernetes.io/no-provisioner) left out; each once, sorted.
func TestReleaseDrivers(t *testing.T) {
	set, err := releaseDrivers(typeOpenEBS, driversManifest)
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(backendDrivers[typeOpenEBS])
	want = append(want, "new.csi.example.com", "fast.example.com/provisioner", "vendor.csi.example.com", "listed.csi.example.com")
	slices.Sort(want)
	if got := set.all(); !slices.Equal(got, want) {
		t.Errorf("all:\n got %q\nwant %q", got, want)
	}

	// Nothing in the manifest: the fixed list.
	if set, err := releaseDrivers(typeLonghorn, ""); err != nil || !slices.Equal(set.all(), []string{longhornDriver}) {
		t.Errorf("an empty manifest: %q, %v", set.all(), err)
	}
	if _, err := releaseDrivers(typeLonghorn, "kind: [unclosed"); err == nil {
		t.Error("an unreadable manifest is no error")
	}
}

// TestReleaseDriversOfEngines: the drivers of an engine an update turns off are those its
// subchart's part of the manifest declares (a CSIDriver the table does not list included) with
// the table's as a floor, but for those a part that stays declares too: turning Mayastor off
// does not take OpenEBS's hostpath provisioner with its etcd class; turning it off together with
// localpv-provisioner (a chart without it) does. Without a manifest, the table's driver alone.
func TestReleaseDriversOfEngines(t *testing.T) {
	set, err := releaseDrivers(typeOpenEBS, driversManifest)
	if err != nil {
		t.Fatal(err)
	}
	none, err := releaseDrivers(typeOpenEBS, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		set  releaseDriverSet
		gone []string
		want map[string]string // subchart -> drivers, comma-separated
	}{
		{"lvm off", set, []string{"lvm-localpv"}, map[string]string{"lvm-localpv": "local.csi.openebs.io,new.csi.example.com"}},
		{"mayastor off", set, []string{"mayastor"}, map[string]string{"mayastor": "io.openebs.csi-mayastor"}},
		{"mayastor and the hostpath provisioner gone", set, []string{"mayastor", "localpv-provisioner"},
			map[string]string{"mayastor": "io.openebs.csi-mayastor,openebs.io/local", "localpv-provisioner": "openebs.io/local"}},
		{"an engine with no object but an empty template", set, []string{"zfs-localpv"}, map[string]string{"zfs-localpv": "zfs.csi.openebs.io"}},
		{"no manifest", none, []string{"lvm-localpv", "rawfile-localpv"},
			map[string]string{"lvm-localpv": "local.csi.openebs.io", "rawfile-localpv": "rawfile.csi.openebs.io"}},
		{"nothing off", set, nil, map[string]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string]string{}
			for p, ds := range tc.set.ofEngines(tc.gone) {
				got[p] = strings.Join(ds, ",")
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			for p, w := range tc.want {
				if got[p] != w {
					t.Errorf("%s: got %q, want %q", p, got[p], w)
				}
			}
		})
	}

	// The update guard's own reading: LVM turned off strands the driver only its manifest names.
	strands := strandedBy(typeOpenEBS, set, "4.4.0", nil, map[string]any{"engines": map[string]any{"local": map[string]any{"lvm": map[string]any{"enabled": true}}}},
		"4.4.0", nil, map[string]any{"engines": map[string]any{"local": map[string]any{"lvm": map[string]any{"enabled": false}}}})
	var lvm []string
	for _, s := range strands {
		if strings.Contains(s.Why, "lvm") {
			lvm = s.Drivers
		}
	}
	if !slices.Equal(lvm, []string{"local.csi.openebs.io", "new.csi.example.com"}) {
		t.Errorf("strandedBy turning LVM off: drivers %q (strands %+v)", lvm, strands)
	}
}

// TestSourcePart: the part of the release a document comes from is the first subchart of its
// Source path.
func TestSourcePart(t *testing.T) {
	for doc, want := range map[string]string{
		"# Source: openebs/charts/mayastor/charts/etcd/templates/x.yaml\nkind: A": "mayastor",
		"# Source: openebs/charts/lvm-localpv/templates/x.yaml\nkind: A":          "lvm-localpv",
		"# Source: openebs/templates/x.yaml\nkind: A":                             "",
		"kind: A\n# Source: openebs/charts/x/templates/y.yaml":                    "",
		"": "",
	} {
		if got := sourcePart(doc); got != want {
			t.Errorf("sourcePart(%q) = %q, want %q", doc, got, want)
		}
	}
}
