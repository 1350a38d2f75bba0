package backend

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// The drivers whose own custom resources the guards read.
const (
	mayastorDriver = "io.openebs.csi-mayastor"
	lvmDriver      = "local.csi.openebs.io"
	zfsDriver      = "zfs.csi.openebs.io"
)

// guardedKind is a custom resource the guards count where the cluster serves it (its CRD is
// installed): the first of Versions that discovery lists is read; none, and there are none of it.
type guardedKind struct {
	Group, Resource string
	Versions        []string
}

// The kinds, as their projects define them (read at the commits named):
//   - VolumeSnapshotContent: snapshot.storage.k8s.io/v1 volumesnapshotcontents, cluster-scoped;
//     spec.driver, spec.deletionPolicy, spec.volumeSnapshotRef, status.readyToUse (the CRD
//     openebs/lvm-localpv ships, deploy/helm/charts/charts/crds/templates/csi-volume-snapshot-content.yaml
//     at f3276f4; v1beta1 is no longer served there).
//   - Longhorn BackingImage: longhorn.io/v1beta2 backingimages, namespaced; spec.sourceType,
//     spec.dataEngine, status.size. Longhorn volume: longhorn.io/v1beta2 volumes, spec.dataEngine
//     v1 or v2 (longhorn/longhorn chart/templates/crds.yaml at bb2f222).
//   - Mayastor DiskPool: openebs.io/v1beta2 diskpools (v1beta1 in older Mayastor), namespaced;
//     spec.node, spec.disks, status.cr_state, status.pool_status, status.used; its finalizer
//     openebs.io/diskpool-protection is removed by the DiskPool operator (openebs/mayastor-control-plane
//     k8s/operators/src/pool/diskpool/crd/v1beta2.rs and utils/utils-lib/src/constants.rs at
//     c02e0cb). Mayastor keeps its volumes in its own store, not as custom resources: they are
//     the PersistentVolumes of its driver.
//   - LVMVolume: local.openebs.io/v1alpha1 lvmvolumes, namespaced; spec.ownerNodeID,
//     spec.volGroup, spec.capacity, status.state; named after the PersistentVolume; finalizer
//     lvm.openebs.io/finalizer, which the node agent removes after destroying the logical volume
//     once the object is deleted (openebs/lvm-localpv deploy/helm/charts/charts/crds/templates/lvmvolume.yaml,
//     pkg/lvm/volume.go, pkg/mgmt/volume/volume.go at f3276f4).
//   - ZFSVolume: zfs.openebs.io/v1 zfsvolumes (v1alpha1 still served), namespaced; spec.ownerNodeID,
//     spec.poolName, spec.capacity, status.state; named after the PersistentVolume; finalizer
//     zfs.openebs.io/finalizer, removed the same way (openebs/zfs-localpv
//     deploy/helm/charts/charts/crds/templates/zfsvolume.yaml, pkg/zfs/volume.go at d52f9a9).
var (
	kindSnapshotContent = guardedKind{"snapshot.storage.k8s.io", "volumesnapshotcontents", []string{"v1"}}
	kindBackingImage    = guardedKind{"longhorn.io", "backingimages", []string{"v1beta2"}}
	kindLonghornVolume  = guardedKind{"longhorn.io", "volumes", []string{"v1beta2"}}
	kindDiskPool        = guardedKind{"openebs.io", "diskpools", []string{"v1beta2", "v1beta1"}}
	kindLVMVolume       = guardedKind{"local.openebs.io", "lvmvolumes", []string{"v1alpha1"}}
	kindZFSVolume       = guardedKind{"zfs.openebs.io", "zfsvolumes", []string{"v1", "v1alpha1"}}
)

// servedResource returns the version of k the API server serves, by discovery; false when its
// CRD is not installed (not an error).
func servedResource(disc discovery.DiscoveryInterface, k guardedKind) (schema.GroupVersionResource, bool, error) {
	for _, v := range k.Versions {
		list, err := disc.ServerResourcesForGroupVersion(k.Group + "/" + v)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return schema.GroupVersionResource{}, false, fmt.Errorf("discovering %s/%s: %w", k.Group, v, err)
		}
		for _, r := range list.APIResources {
			if r.Name == k.Resource {
				return schema.GroupVersionResource{Group: k.Group, Version: v, Resource: k.Resource}, true, nil
			}
		}
	}
	return schema.GroupVersionResource{}, false, nil
}

// listServed lists every object of k in all namespaces; none when the cluster does not serve it.
func listServed(ctx context.Context, disc discovery.DiscoveryInterface, dyn dynamic.Interface, k guardedKind) ([]unstructured.Unstructured, error) {
	gvr, ok, err := servedResource(disc, k)
	if err != nil || !ok {
		return nil, err
	}
	list, err := dyn.Resource(gvr).Namespace(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil // the CRD went away meanwhile
	}
	if err != nil {
		return nil, fmt.Errorf("listing %s.%s: %w", k.Resource, k.Group, err)
	}
	return list.Items, nil
}

// guardedObjects lists the custom resources that block an uninstall (or an update that removes
// one of drivers), each where its CRD is installed: VolumeSnapshotContents of the drivers,
// Longhorn's BackingImages, Mayastor's DiskPools, and LVM and ZFS volume objects whose
// PersistentVolume is gone. It also marks, among listed, Longhorn volumes of the v2 data engine.
func guardedObjects(ctx context.Context, client kubernetes.Interface, dyn dynamic.Interface, drivers []string, listed []guardedVolume) ([]guardedVolume, error) {
	disc := client.Discovery()
	ours := func(d string) bool { return slices.Contains(drivers, d) }
	var out []guardedVolume

	contents, err := listServed(ctx, disc, dyn, kindSnapshotContent)
	if err != nil {
		return nil, err
	}
	for _, c := range contents {
		driver := str(c, "spec", "driver")
		if !ours(driver) {
			continue
		}
		ready := "not ready"
		if b, _, _ := unstructured.NestedBool(c.Object, "status", "readyToUse"); b {
			ready = "ready"
		}
		snapshot := "no VolumeSnapshot"
		if name := str(c, "spec", "volumeSnapshotRef", "name"); name != "" {
			snapshot = "VolumeSnapshot " + str(c, "spec", "volumeSnapshotRef", "namespace") + "/" + name
		}
		out = append(out, guardedVolume{Kind: "VolumeSnapshotContent", Name: c.GetName(), Driver: driver, State: ready,
			Reclaim: "deletionPolicy " + str(c, "spec", "deletionPolicy"),
			Detail: snapshot + "; without " + driver + " it hangs on its finalizers (no driver is left to delete the snapshot it holds): " +
				"delete the VolumeSnapshot (and, under deletionPolicy Retain, this content) while the driver runs"})
	}

	if ours(longhornDriver) {
		images, err := listServed(ctx, disc, dyn, kindBackingImage)
		if err != nil {
			return nil, err
		}
		for _, b := range images {
			out = append(out, guardedVolume{Kind: "Longhorn BackingImage", Name: b.GetNamespace() + "/" + b.GetName(), Driver: longhornDriver,
				State: strings.TrimSpace(str(b, "spec", "sourceType") + " " + str(b, "spec", "dataEngine")),
				Detail: fmt.Sprintf("Longhorn's uninstaller deletes it with its files on the nodes' disks, and the volumes made from it need it: "+
					"export what you need, then delete it (Longhorn UI, or `kubectl -n %s delete backingimages.longhorn.io %s`)", b.GetNamespace(), b.GetName())})
		}
		if err := markV2(ctx, disc, dyn, listed); err != nil {
			return nil, err
		}
	}

	if ours(mayastorDriver) {
		pools, err := listServed(ctx, disc, dyn, kindDiskPool)
		if err != nil {
			return nil, err
		}
		for _, p := range pools {
			disks, _, _ := unstructured.NestedStringSlice(p.Object, "spec", "disks")
			used, _, _ := unstructured.NestedInt64(p.Object, "status", "used")
			out = append(out, guardedVolume{Kind: "Mayastor DiskPool", Name: p.GetNamespace() + "/" + p.GetName(), Driver: mayastorDriver,
				State: strings.TrimSpace(str(p, "status", "cr_state") + " " + str(p, "status", "pool_status")),
				Detail: fmt.Sprintf("node %s, disks %s, %d bytes used; the replicas of Mayastor volumes live on it, and its finalizer "+
					"openebs.io/diskpool-protection is removed only by Mayastor's DiskPool operator: delete the Mayastor volumes on it, then the pool "+
					"(`kubectl -n %s delete diskpools.openebs.io %s`) while Mayastor runs", str(p, "spec", "node"), strings.Join(disks, ","), used,
					p.GetNamespace(), p.GetName())})
		}
	}

	for _, lv := range []struct {
		driver, what, place, field, finalizer string
		kind                                  guardedKind
	}{
		{lvmDriver, "LVM volume", "volume group", "volGroup", "lvm.openebs.io/finalizer", kindLVMVolume},
		{zfsDriver, "ZFS volume", "pool", "poolName", "zfs.openebs.io/finalizer", kindZFSVolume},
	} {
		if !ours(lv.driver) {
			continue
		}
		vols, err := listServed(ctx, disc, dyn, lv.kind)
		if err != nil {
			return nil, err
		}
		if len(vols) == 0 {
			continue
		}
		pvs, err := client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("listing PersistentVolumes: %w", err)
		}
		withPV := map[string]bool{}
		for _, pv := range pvs.Items {
			withPV[pv.Name] = true
		}
		for _, v := range vols {
			if withPV[v.GetName()] { // the driver names it after its PersistentVolume, listed as such
				continue
			}
			out = append(out, guardedVolume{Kind: lv.what, Name: v.GetNamespace() + "/" + v.GetName(), Driver: lv.driver, State: str(v, "status", "state"),
				Detail: fmt.Sprintf("no PersistentVolume (deleted under reclaim Retain); its data and space stay in %s %s on node %s, and its finalizer %s "+
					"is removed only by the driver: delete it (`kubectl -n %s delete %s.%s %s`; the driver then frees the space) while the driver runs, "+
					"or keep the driver", lv.place, str(v, "spec", lv.field), str(v, "spec", "ownerNodeID"), lv.finalizer,
					v.GetNamespace(), lv.kind.Resource, lv.kind.Group, v.GetName())})
		}
	}
	return out, nil
}

// markV2 marks the Longhorn volumes of the v2 (SPDK) data engine among listed, by their
// PersistentVolume or as Longhorn volumes of their own: their data is on block disks only
// Longhorn's v2 engine reads.
func markV2(ctx context.Context, disc discovery.DiscoveryInterface, dyn dynamic.Interface, listed []guardedVolume) error {
	vols, err := listServed(ctx, disc, dyn, kindLonghornVolume)
	if err != nil {
		return err
	}
	v2 := map[string]bool{}
	for _, v := range vols {
		if str(v, "spec", "dataEngine") != "v2" {
			continue
		}
		v2["PersistentVolume/"+v.GetName()] = true
		if pv := str(v, "status", "kubernetesStatus", "pvName"); pv != "" {
			v2["PersistentVolume/"+pv] = true
		}
		v2["Longhorn volume/"+v.GetNamespace()+"/"+v.GetName()] = true
	}
	for i := range listed {
		if listed[i].Driver == longhornDriver && v2[listed[i].Kind+"/"+listed[i].Name] {
			listed[i].DataEngine = "v2"
		}
	}
	return nil
}

// str is the string at fields of obj, "" when there is none.
func str(obj unstructured.Unstructured, fields ...string) string {
	s, _, _ := unstructured.NestedString(obj.Object, fields...)
	return s
}
