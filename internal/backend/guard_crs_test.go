package backend_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/backend"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

// lockOpenEBSVolumeCRDs: the DiskPool, LVMVolume and ZFSVolume CRDs the guards' cluster test
// installs when the cluster lacks them and removes at its end.
const lockOpenEBSVolumeCRDs = "openebs-volume-crds"

// crdEnv is a guards' cluster test: the cluster's clients and a namespace of its own (removed at
// the end, with every object the test made in it).
type crdEnv struct {
	t      *testing.T
	client kubernetes.Interface
	dyn    dynamic.Interface
	ns     string
}

func newCRDEnv(t *testing.T, locks ...string) *crdEnv {
	t.Helper()
	client := acctest.Kube(t)
	for _, l := range locks {
		acctest.LockCluster(t, client, l)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", acctest.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	e := &crdEnv{t: t, client: client, ns: acctest.RandomName("acc-guard-crs")}
	if e.dyn, err = dynamic.NewForConfig(rc); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := client.CoreV1().Namespaces().Delete(context.Background(), e.ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Logf("cleanup: deleting namespace %s: %v", e.ns, err)
		}
	})
	return e
}

// crd installs testdata/crds/<file> unless the cluster has that CRD already (then it is left as
// it is, and left in place at the end), waits until discovery serves it, and returns its GVR.
func (e *crdEnv) crd(file string) schema.GroupVersionResource {
	e.t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "crds", file))
	if err != nil {
		e.t.Fatal(err)
	}
	var obj map[string]any
	if err := yaml.Unmarshal(raw, &obj); err != nil {
		e.t.Fatal(err)
	}
	want := &unstructured.Unstructured{Object: obj}
	group, _, _ := unstructured.NestedString(obj, "spec", "group")
	plural, _, _ := unstructured.NestedString(obj, "spec", "names", "plural")
	versions, _, _ := unstructured.NestedSlice(obj, "spec", "versions")
	first, ok := versions[0].(map[string]any)
	if !ok {
		e.t.Fatalf("%s: spec.versions[0] is %T", file, versions[0])
	}
	version, _, _ := unstructured.NestedString(first, "name")
	ctx := context.Background()
	crds := e.dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	gvr := schema.GroupVersionResource{Group: group, Version: version, Resource: plural}
	name := want.GetName()
	if _, err := crds.Create(ctx, want, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		e.t.Logf("CRD %s is on the cluster already: used, and left in place", name)
	} else if err != nil {
		e.t.Fatal(err)
	} else {
		e.t.Cleanup(func() {
			if err := crds.Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				e.t.Logf("cleanup: deleting CRD %s: %v", name, err)
			}
		})
	}
	err = kube.Poll(ctx, 200*time.Millisecond, time.Minute, "CRD "+name+" to be served", func(context.Context) (bool, string, error) {
		list, err := e.client.Discovery().ServerResourcesForGroupVersion(gvr.GroupVersion().String())
		if err != nil {
			return kube.KeepPolling(err)
		}
		for _, r := range list.APIResources {
			if r.Name == gvr.Resource {
				return true, "", nil
			}
		}
		return false, "not in discovery yet", nil
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return gvr
}

// create makes a custom resource (in the test's namespace unless namespace is "-": cluster-scoped),
// deleted at the end of the test.
func (e *crdEnv) create(gvr schema.GroupVersionResource, kind, name, namespace string, spec, status map[string]any) {
	e.t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.GroupVersion().String(), "kind": kind,
		"metadata": map[string]any{"name": name}, "spec": spec, "status": status,
	}}
	ri := e.dyn.Resource(gvr).Namespace(e.ns)
	if namespace == "-" {
		ri = e.dyn.Resource(gvr)
	} else {
		obj.SetNamespace(e.ns)
	}
	if _, err := ri.Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		if err := ri.Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			e.t.Logf("cleanup: deleting %s %s: %v", kind, name, err)
		}
	})
}

// pv makes a PersistentVolume of driver, removed at the end of the test.
func (e *crdEnv) pv(name, driver string) {
	e.t.Helper()
	obj := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: k8sresource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: name}},
		},
	}
	if _, err := e.client.CoreV1().PersistentVolumes().Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		if err := e.client.CoreV1().PersistentVolumes().Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			e.t.Logf("cleanup: deleting PersistentVolume %s: %v", name, err)
		}
	})
}

// wantLines fails unless got has each of want (whitespace as it is) and none of absent.
func wantLines(t *testing.T, what, got string, want, absent []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s does not name %q:\n%s", what, w, got)
		}
	}
	for _, a := range absent {
		if strings.Contains(got, a) {
			t.Errorf("%s names %q:\n%s", what, a, got)
		}
	}
}

// TestClusterGuardObjects_openebs: on the real API server, with the real CRDs' group, version, kind and
// scope (testdata/crds), the destroy guard of an OpenEBS release refuses while a
// VolumeSnapshotContent of a driver the release's manifest brings (a CSIDriver object the fixed
// list does not know), a Mayastor DiskPool, and an LVM and a ZFS volume object whose
// PersistentVolume is gone exist, naming each with why and how to remove it; a content of another
// driver and an LVM volume object whose PersistentVolume exists are not named. The update guard
// that turns LVM off names the orphaned LVM volume object. Then, the objects deleted, neither
// names them.
func TestClusterGuardObjects_openebs(t *testing.T) {
	e := newCRDEnv(t, acctest.LockSnapshotCRDs, lockOpenEBSVolumeCRDs)
	ctx := context.Background()
	vscGVR := e.crd("volumesnapshotcontents.yaml")
	poolGVR := e.crd("diskpools.yaml")
	lvmGVR := e.crd("lvmvolumes.yaml")
	zfsGVR := e.crd("zfsvolumes.yaml")

	// The release brings a driver of its own, in its manifest.
	driver := acctest.RandomName("acc") + ".csi.example.com"
	manifest := fmt.Sprintf("apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata:\n  name: %s\nspec: {}\n", driver)
	content, otherContent := acctest.RandomName("acc-snapcontent"), acctest.RandomName("acc-snapcontent-other")
	snapSpec := func(d string) map[string]any {
		// As the real CRD requires: a source, a deletion policy, the driver, the snapshot it is bound to.
		return map[string]any{"deletionPolicy": "Delete", "driver": d, "source": map[string]any{"volumeHandle": "h-" + content},
			"volumeSnapshotRef": map[string]any{"name": "snap", "namespace": e.ns}}
	}
	e.create(vscGVR, "VolumeSnapshotContent", content, "-", snapSpec(driver), map[string]any{"readyToUse": true})
	e.create(vscGVR, "VolumeSnapshotContent", otherContent, "-", snapSpec("other.csi.example.com"), map[string]any{"readyToUse": true})
	pool := acctest.RandomName("acc-pool")
	e.create(poolGVR, "DiskPool", pool, "", map[string]any{"node": "node-1", "disks": []any{"aio:///dev/sdz"}},
		map[string]any{"cr_state": "Created", "pool_status": "Online", "used": int64(4096)})
	orphanLVM, keptLVM, orphanZFS := acctest.RandomName("pvc-lvm"), acctest.RandomName("pvc-lvm-kept"), acctest.RandomName("pvc-zfs")
	e.create(lvmGVR, "LVMVolume", orphanLVM, "", map[string]any{"ownerNodeID": "node-1", "volGroup": "lvmvg", "capacity": "1073741824", "vgPattern": "^lvmvg$"},
		map[string]any{"state": "Ready"})
	e.pv(keptLVM, "local.csi.openebs.io")
	e.create(lvmGVR, "LVMVolume", keptLVM, "", map[string]any{"ownerNodeID": "node-1", "volGroup": "lvmvg", "capacity": "1073741824", "vgPattern": "^lvmvg$"},
		map[string]any{"state": "Ready"})
	e.create(zfsGVR, "ZFSVolume", orphanZFS, "", map[string]any{"ownerNodeID": "node-2", "poolName": "zfspv-pool", "capacity": "1073741824"},
		map[string]any{"state": "Ready"})

	wantNamed := []string{
		fmt.Sprintf("VolumeSnapshotContent %s (%s, ready, deletionPolicy Delete): VolumeSnapshot %s/snap; without %s it hangs on its finalizers",
			content, driver, e.ns, driver),
		fmt.Sprintf("Mayastor DiskPool %s/%s (io.openebs.csi-mayastor, Created Online): node node-1, disks aio:///dev/sdz, 4096 bytes used; "+
			"the replicas of Mayastor volumes live on it, and its finalizer openebs.io/diskpool-protection", e.ns, pool),
		fmt.Sprintf("LVM volume %s/%s (local.csi.openebs.io, Ready): no PersistentVolume (deleted under reclaim Retain); its data and space stay in "+
			"volume group lvmvg on node node-1, and its finalizer lvm.openebs.io/finalizer is removed only by the driver: delete it "+
			"(`kubectl -n %s delete lvmvolumes.local.openebs.io %s`", e.ns, orphanLVM, e.ns, orphanLVM),
		fmt.Sprintf("ZFS volume %s/%s (zfs.csi.openebs.io, Ready): no PersistentVolume (deleted under reclaim Retain); its data and space stay in "+
			"pool zfspv-pool on node node-2", e.ns, orphanZFS),
	}
	notNamed := []string{otherContent, "LVM volume " + e.ns + "/" + keptLVM}

	got, err := backend.GuardDestroy(ctx, acctest.Kubeconfig(), "openebs", e.ns, manifest, false)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got, "error: Storage backend "+e.ns+"/openebs still serves volumes") {
		t.Errorf("the destroy guard let the uninstall go:\n%s", got)
	}
	wantLines(t, "the destroy guard", got, append(wantNamed, "remove each other object as its line says"), notNamed)

	// Turning LVM off strands the LVM driver's objects, not the others'.
	on := map[string]any{"engines": map[string]any{"local": map[string]any{"lvm": map[string]any{"enabled": true}}}}
	off := map[string]any{"engines": map[string]any{"local": map[string]any{"lvm": map[string]any{"enabled": false}}}}
	got, err = backend.GuardUpdate(ctx, acctest.Kubeconfig(), "openebs", e.ns, manifest, "4.4.0", on, map[string]any{}, "4.4.0", on, off)
	if err != nil {
		t.Fatal(err)
	}
	wantLines(t, "the update guard", got, []string{"error: Update of storage backend " + e.ns + "/openebs would strand volumes",
		"lvm_enabled (engines.local.lvm.enabled) turns from true to false (local.csi.openebs.io)", wantNamed[2],
		"PersistentVolume " + keptLVM + " (local.csi.openebs.io, Available, reclaim Retain)", "remove each other object as its line says"},
		[]string{content, pool, orphanZFS, "LVM volume " + e.ns + "/" + keptLVM})

	// Once they are gone, the guards no longer name them.
	for _, o := range []struct {
		gvr      schema.GroupVersionResource
		name, ns string
	}{{vscGVR, content, ""}, {poolGVR, pool, e.ns}, {lvmGVR, orphanLVM, e.ns}, {zfsGVR, orphanZFS, e.ns}} {
		if err := e.dyn.Resource(o.gvr).Namespace(o.ns).Delete(ctx, o.name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	got, err = backend.GuardDestroy(ctx, acctest.Kubeconfig(), "openebs", e.ns, manifest, false)
	if err != nil {
		t.Fatal(err)
	}
	wantLines(t, "the destroy guard after the objects were deleted", got, nil, []string{content, pool, orphanLVM, orphanZFS})
}

// TestClusterGuardObjects_longhorn: the destroy guard of a Longhorn release refuses while a BackingImage
// exists and marks a Longhorn volume of the v2 data engine; the update guard that turns the v2
// data engine off names the v2 volume and not the v1 one.
func TestClusterGuardObjects_longhorn(t *testing.T) {
	e := newCRDEnv(t, acctest.LockLonghorn)
	ctx := context.Background()
	imageGVR := e.crd("backingimages.yaml")
	volGVR := e.crd("longhorn-volumes.yaml")
	image, v2Vol, v1Vol := acctest.RandomName("acc-bi"), acctest.RandomName("acc-lh-v2"), acctest.RandomName("acc-lh-v1")
	e.create(imageGVR, "BackingImage", image, "", map[string]any{"sourceType": "download", "dataEngine": "v1",
		"sourceParameters": map[string]any{"url": "http://127.0.0.1:1/image.qcow2"}}, nil)
	e.create(volGVR, "Volume", v2Vol, "", map[string]any{"dataEngine": "v2", "numberOfReplicas": int64(1), "size": "1073741824"}, nil)
	e.create(volGVR, "Volume", v1Vol, "", map[string]any{"dataEngine": "v1", "numberOfReplicas": int64(1), "size": "1073741824"}, nil)

	got, err := backend.GuardDestroy(ctx, acctest.Kubeconfig(), "longhorn", e.ns, "", false)
	if err != nil {
		t.Fatal(err)
	}
	wantLines(t, "the destroy guard", got, []string{
		"error: Storage backend " + e.ns + "/longhorn still serves volumes",
		fmt.Sprintf("Longhorn BackingImage %s/%s (driver.longhorn.io, download v1): Longhorn's uninstaller deletes it with its files on the nodes' disks, "+
			"and the volumes made from it need it: export what you need, then delete it (Longhorn UI, or `kubectl -n %s delete backingimages.longhorn.io %s`)",
			e.ns, image, e.ns, image),
		fmt.Sprintf("Longhorn volume %s/%s (driver.longhorn.io, data engine v2): no claim, no class", e.ns, v2Vol),
		fmt.Sprintf("Longhorn volume %s/%s (driver.longhorn.io): no claim, no class", e.ns, v1Vol),
	}, nil)

	got, err = backend.GuardUpdate(ctx, acctest.Kubeconfig(), "longhorn", e.ns, "", "1.9.2", map[string]any{},
		map[string]any{"defaultSettings": map[string]any{"v2DataEngine": "true"}}, "1.9.2", map[string]any{}, map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	wantLines(t, "the update guard", got, []string{
		"defaultSettings.v2DataEngine turns from true to false (driver.longhorn.io, data engine v2): Longhorn stops its v2 (SPDK) data engine",
		fmt.Sprintf("Longhorn volume %s/%s (driver.longhorn.io, data engine v2)", e.ns, v2Vol),
	}, []string{v1Vol, image})
}

// TestClusterGuardUpdate_manifestDrivers: the update guard finds the drivers of an engine it
// turns off the way the destroy guard finds a release's, from the release's manifest: a
// CSIDriver the provider's table does not know, in the LVM subchart's part of the manifest,
// blocks turning LVM off while a volume of it exists (named with the table's LVM driver in the
// scope); a driver of the Mayastor subchart's part does not, and blocks turning Mayastor off
// instead. The destroy guard names both.
func TestClusterGuardUpdate_manifestDrivers(t *testing.T) {
	e := newCRDEnv(t)
	ctx := context.Background()
	lvmOnly, mayastorOnly := acctest.RandomName("acc")+".lvm.example.com", acctest.RandomName("acc")+".mayastor.example.com"
	manifest := fmt.Sprintf(`---
# Source: openebs/charts/lvm-localpv/templates/csidriver.yaml
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata:
  name: %s
spec: {}
---
# Source: openebs/charts/mayastor/templates/storageclass.yaml
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: %s
provisioner: %s
`, lvmOnly, acctest.RandomName("acc-mayastor-class"), mayastorOnly)
	lvmPV, mayastorPV := acctest.RandomName("acc-lvm-pv"), acctest.RandomName("acc-mayastor-pv")
	e.pv(lvmPV, lvmOnly)
	e.pv(mayastorPV, mayastorOnly)

	engines := func(lvm, mayastor bool) map[string]any {
		return map[string]any{"engines": map[string]any{
			"local":      map[string]any{"lvm": map[string]any{"enabled": lvm}, "zfs": map[string]any{"enabled": false}},
			"replicated": map[string]any{"mayastor": map[string]any{"enabled": mayastor}},
		}}
	}
	update := func(to map[string]any) string {
		t.Helper()
		got, err := backend.GuardUpdate(ctx, acctest.Kubeconfig(), "openebs", e.ns, manifest, "4.4.0", nil, engines(true, true), "4.4.0", nil, to)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	wantLines(t, "the update guard turning LVM off", update(engines(false, true)), []string{
		"error: Update of storage backend " + e.ns + "/openebs would strand volumes",
		"lvm_enabled (engines.local.lvm.enabled) turns from true to false (" + lvmOnly + ", local.csi.openebs.io): their CSI driver is uninstalled",
		"PersistentVolume " + lvmPV + " (" + lvmOnly + ", Available, reclaim Retain)",
	}, []string{mayastorPV})
	wantLines(t, "the update guard turning Mayastor off", update(engines(true, false)), []string{
		"mayastor_enabled (engines.replicated.mayastor.enabled) turns from true to false (" + mayastorOnly + ", io.openebs.csi-mayastor)",
		"PersistentVolume " + mayastorPV + " (" + mayastorOnly + ", Available, reclaim Retain)",
	}, []string{lvmPV})
	got, err := backend.GuardDestroy(ctx, acctest.Kubeconfig(), "openebs", e.ns, manifest, false)
	if err != nil {
		t.Fatal(err)
	}
	wantLines(t, "the destroy guard", got, []string{"PersistentVolume " + lvmPV, "PersistentVolume " + mayastorPV}, nil)
}
