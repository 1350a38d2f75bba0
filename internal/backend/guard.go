package backend

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/catalog"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/helm"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/volumes"
)

// backendDrivers are the CSI drivers and external provisioners whose volumes a backend type
// serves. Uninstalling the backend leaves every volume of these drivers without its driver (and
// Longhorn's uninstaller deletes its volumes), whatever StorageClass made them.
var backendDrivers = map[string][]string{
	typeLonghorn: {longhornDriver},
	typeOpenEBS: {
		hostpathDriver,            // LocalPV hostpath (external provisioner; PVs are local/hostPath)
		"io.openebs.csi-mayastor", // Mayastor (replicated)
		"local.csi.openebs.io",    // LocalPV LVM
		"zfs.csi.openebs.io",      // LocalPV ZFS
		"rawfile.csi.openebs.io",  // LocalPV rawfile (charts that have it)
	},
}

// The drivers the update guard names on their own (strand.go).
const (
	longhornDriver = "driver.longhorn.io"
	hostpathDriver = catalog.OpenEBSLocalProvisioner
)

const (
	annProvisionedBy      = "pv.kubernetes.io/provisioned-by"
	annStorageProvisioner = "volume.kubernetes.io/storage-provisioner"
	annBetaProvisioner    = "volume.beta.kubernetes.io/storage-provisioner"
	annBetaClass          = "volume.beta.kubernetes.io/storage-class"
)

// guardedVolume is one volume (or claim still waiting for one) that the backend serves.
type guardedVolume struct {
	// Kind is "PersistentVolume", "PersistentVolumeClaim" (no volume yet) or "Longhorn volume"
	// (a volumes.longhorn.io object without a PersistentVolume).
	Kind    string
	Name    string
	Driver  string
	State   string // PV phase, claim phase or Longhorn volume state
	Reclaim string
	Claim   string // namespace/name, "" when none
	Class   string
	// MigratedTo is, for the source volume a clusterstorage_volume_migration kept, its
	// record "<namespace>/<claim> <new volume>" (volumes.MigratedToAnnotation).
	MigratedTo string
	// DataEngine is "v2" for a Longhorn volume of the v2 (SPDK) data engine.
	DataEngine string
	// Detail, for an object that is not a volume or claim (guard_crs.go: a VolumeSnapshotContent,
	// a BackingImage, a DiskPool, an LVM or ZFS volume object), says what it holds, why it blocks
	// and how to remove it, in place of claim and class.
	Detail string
}

func (v guardedVolume) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", v.Kind, v.Name)
	var facts []string
	for _, f := range []string{v.Driver, v.State} {
		if f != "" {
			facts = append(facts, f)
		}
	}
	if v.DataEngine != "" {
		facts = append(facts, "data engine "+v.DataEngine)
	}
	switch {
	case v.Reclaim == "":
	case v.Detail != "":
		facts = append(facts, v.Reclaim)
	default:
		facts = append(facts, "reclaim "+v.Reclaim)
	}
	if len(facts) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(facts, ", "))
	}
	if v.Detail != "" {
		fmt.Fprintf(&b, ": %s", v.Detail)
		return b.String()
	}
	claim := "no claim"
	if v.Claim != "" {
		claim = "claim " + v.Claim
	}
	class := "no class"
	if v.Class != "" {
		class = "class " + v.Class
	}
	fmt.Fprintf(&b, ": %s, %s", claim, class)
	if claim, to, ok := strings.Cut(v.MigratedTo, " "); ok {
		fmt.Fprintf(&b, "; the source volume a clusterstorage_volume_migration of claim %s kept (the claim is on %s now): "+
			"set delete_source = true on that migration to delete it", claim, to)
	}
	return b.String()
}

// guard refuses the uninstall while the backend serves any volume: every PersistentVolume of its
// drivers (by CSI driver, provisioner annotation or its class's provisioner), in any phase and
// on any StorageClass, every claim of such a class still waiting for its volume, and for
// Longhorn every volumes.longhorn.io object; and while objects of those drivers that need them to
// go away exist (guard_crs.go: VolumeSnapshotContents, Longhorn BackingImages, Mayastor DiskPools,
// LVM and ZFS volume objects without a PersistentVolume). The drivers are the type's and those
// the release's own manifest installs (releaseDrivers, all). The release's own claims (those of its
// StatefulSets' volumeClaimTemplates: Mayastor's etcd, Loki, MinIO) do not count. With
// force_destroy the volumes are listed in a warning instead.
func (r *Resource) guard(ctx context.Context, client kubernetes.Interface, s spec, st *helm.Status) diag.Diagnostics {
	var diags diag.Diagnostics
	internal, err := internalClaims(st)
	var drivers []string
	if err == nil {
		var set releaseDriverSet
		set, err = releaseDrivers(s.Type, st.Manifest)
		drivers = set.all()
	}
	if err != nil {
		diags.AddError("Reading the manifest of Helm release "+s.id()+" failed",
			"The destroy guard needs it to tell the release's own claims from users' ones and to know the release's CSI drivers: "+err.Error()+
				". Nothing was uninstalled. See `helm get manifest "+s.ReleaseName+" -n "+s.Namespace+"`.")
		return diags
	}
	vols, err := r.servedVolumes(ctx, client, drivers, internal)
	if err != nil {
		diags.AddError("Listing the volumes of "+s.Type+" release "+s.id()+" failed",
			"Destroy uninstalls only when no volume of the backend's drivers ("+strings.Join(drivers, ", ")+
				") exists, and that could not be checked: "+err.Error()+". Nothing was uninstalled. The provider's credentials need "+
				"list access to PersistentVolumes, PersistentVolumeClaims and StorageClasses, and, where their CRDs are installed, to "+
				"volumesnapshotcontents.snapshot.storage.k8s.io, volumes and backingimages.longhorn.io, diskpools.openebs.io, "+
				"lvmvolumes.local.openebs.io and zfsvolumes.zfs.openebs.io.")
		return diags
	}
	if len(vols) == 0 {
		return diags
	}
	lines := make([]string, 0, len(vols))
	for _, v := range vols {
		lines = append(lines, "  - "+v.String())
	}
	list := strings.Join(lines, "\n")
	if s.ForceDestroy {
		tflog.Warn(ctx, "uninstalling although the backend serves volumes (force_destroy)", map[string]any{"volumes": list})
		diags.AddWarning("Uninstalling "+s.Type+" release "+s.id()+" although it serves volumes (force_destroy)",
			"These volumes lose their driver; their data is not deleted by the provider, but "+lostBy(s.Type)+":\n"+list)
		return diags
	}
	diags.AddError("Storage backend "+s.id()+" still serves volumes",
		fmt.Sprintf("Uninstalling %s now would leave these volumes and objects without their driver (%s):\n%s\n\n"+
			"Nothing was uninstalled. Back up what you need, then delete each claim (its volume is deleted with it under reclaim Delete), "+
			"delete the PersistentVolumes left Released or Available (they keep their data under reclaim Retain)%s, remove each other object "+
			"as its line says, and destroy again. Or set force_destroy = true to uninstall anyway.", s.Type, lostBy(s.Type), list, longhornRemedy(s.Type)))
	return diags
}

// servedVolumes lists the volumes of the given drivers (driverVolumes), when Longhorn's driver is
// among them Longhorn's own volumes without a PersistentVolume, and the objects of the drivers
// that block (guardedObjects). The destroy guard
// asks for every driver of the backend, the update guard (strand.go) for those an update strands.
func (r *Resource) servedVolumes(ctx context.Context, client kubernetes.Interface, drivers []string, internal func(namespace, name string) bool) ([]guardedVolume, error) {
	vols, err := driverVolumes(ctx, client, drivers, internal)
	if err != nil {
		return nil, err
	}
	for _, d := range drivers {
		if d == longhornDriver {
			more, err := r.longhornVolumes(ctx, vols)
			if err != nil {
				return nil, err
			}
			vols = append(vols, more...)
		}
	}
	dyn, err := r.data.Kube.Dynamic()
	if err != nil {
		return nil, err
	}
	objs, err := guardedObjects(ctx, client, dyn, drivers, vols)
	if err != nil {
		return nil, err
	}
	return append(vols, objs...), nil
}

func lostBy(t string) string {
	if t == typeLonghorn {
		return "Longhorn's uninstaller deletes the Longhorn volumes and their replicas' data"
	}
	return "no OpenEBS driver is left to mount, resize or delete them"
}

func longhornRemedy(t string) string {
	if t == typeLonghorn {
		return ", delete Longhorn volumes that have no PersistentVolume (Longhorn UI, or `kubectl -n <namespace> delete volumes.longhorn.io <name>`)"
	}
	return ""
}

// internalClaims returns a matcher for the release's own claims: those named
// <template>-<statefulset>-<ordinal> after a volumeClaimTemplate of a StatefulSet in the
// release's manifest, in that StatefulSet's namespace.
func internalClaims(st *helm.Status) (func(namespace, name string) bool, error) {
	templates, err := helm.ClaimTemplates(st.Manifest, st.Namespace)
	if err != nil {
		return nil, err
	}
	patterns := map[string][]*regexp.Regexp{} // namespace -> claim name patterns
	for key, names := range templates {
		ns, sts, _ := strings.Cut(key, "/")
		for _, t := range names {
			patterns[ns] = append(patterns[ns], regexp.MustCompile("^"+regexp.QuoteMeta(t+"-"+sts+"-")+"[0-9]+$"))
		}
	}
	return func(namespace, name string) bool {
		for _, p := range patterns[namespace] {
			if p.MatchString(name) {
				return true
			}
		}
		return false
	}, nil
}

// driverVolumes lists the PersistentVolumes of the given drivers and the claims of their classes
// that wait for a volume, except the claims internal reports (and their volumes).
func driverVolumes(ctx context.Context, client kubernetes.Interface, drivers []string, internal func(namespace, name string) bool) ([]guardedVolume, error) {
	ours := map[string]bool{}
	for _, d := range drivers {
		ours[d] = true
	}
	classes, err := client.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing StorageClasses: %w", err)
	}
	classDriver := map[string]string{}
	for _, c := range classes.Items {
		if ours[c.Provisioner] {
			classDriver[c.Name] = c.Provisioner
		}
	}
	pvs, err := client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing PersistentVolumes: %w", err)
	}
	var out []guardedVolume
	seen := map[string]bool{} // PV names
	for i := range pvs.Items {
		pv := &pvs.Items[i]
		driver := pvDriver(pv)
		if !ours[driver] {
			if d, ok := classDriver[pv.Spec.StorageClassName]; ok {
				driver = d
			} else {
				continue
			}
		}
		seen[pv.Name] = true
		v := guardedVolume{Kind: "PersistentVolume", Name: pv.Name, Driver: driver, State: string(pv.Status.Phase),
			Reclaim: string(pv.Spec.PersistentVolumeReclaimPolicy), Class: pv.Spec.StorageClassName,
			MigratedTo: pv.Annotations[volumes.MigratedToAnnotation]}
		if ref := pv.Spec.ClaimRef; ref != nil {
			if internal(ref.Namespace, ref.Name) {
				continue
			}
			v.Claim = ref.Namespace + "/" + ref.Name
			if pv.Status.Phase == corev1.VolumeReleased {
				v.Claim += " (deleted)"
			}
		}
		out = append(out, v)
	}
	pvcs, err := client.CoreV1().PersistentVolumeClaims("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing PersistentVolumeClaims: %w", err)
	}
	for i := range pvcs.Items {
		pvc := &pvcs.Items[i]
		if seen[pvc.Spec.VolumeName] || internal(pvc.Namespace, pvc.Name) {
			continue
		}
		class := pvc.Annotations[annBetaClass]
		if pvc.Spec.StorageClassName != nil {
			class = *pvc.Spec.StorageClassName
		}
		driver, ok := classDriver[class]
		for _, a := range []string{annStorageProvisioner, annBetaProvisioner} {
			if p := pvc.Annotations[a]; ours[p] {
				driver, ok = p, true
			}
		}
		if !ok {
			continue
		}
		out = append(out, guardedVolume{Kind: "PersistentVolumeClaim", Name: pvc.Namespace + "/" + pvc.Name, Driver: driver,
			State: string(pvc.Status.Phase) + ", no volume yet", Claim: pvc.Namespace + "/" + pvc.Name, Class: class})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Kind+out[i].Name < out[j].Kind+out[j].Name })
	return out, nil
}

// pvDriver is the CSI driver of a PV, or the provisioner that made it.
func pvDriver(pv *corev1.PersistentVolume) string {
	if pv.Spec.CSI != nil {
		return pv.Spec.CSI.Driver
	}
	return pv.Annotations[annProvisionedBy]
}
