package volumemigration

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/capacity"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/volumes"
)

// problem is a reason a migration cannot run: Attribute names the attribute it is about.
type problem struct {
	Attribute string
	Summary   string
	Detail    string
}

func (p problem) Error() string { return p.Summary + ": " + p.Detail }

// planInput is what the checks read from the cluster.
type planInput struct {
	Namespace, ClaimName, StorageClass string
	// Volume is the existing volume of a restore (Spec.Volume): its class need not exist, and
	// no room is needed.
	Volume string
	// Claim is nil when the claim does not exist.
	Claim *corev1.PersistentVolumeClaim
	// Progress is the migration recorded on the claim (or, without a claim, on a volume).
	Progress progress
	// Class is the target class, nil when it does not exist; Classes names them all.
	Class     *storagev1.StorageClass
	Classes   []string
	Workloads []volumes.Workload
	// Room is what the cluster says the target class can still provision (nil: not read);
	// Needed the bytes the new volume asks for; SourceNode the node the source volume lives on
	// ("" when any node can mount it).
	Room       *capacity.ClassCapacity
	Needed     int64
	SourceNode string
	// HostPath is the free space under an OpenEBS hostpath target class's base path on the node
	// the copy runs on (nil: not measured).
	HostPath *hostPathRoom
}

// hostPathRoom is what df says about a hostPath class's base path on one node.
type hostPathRoom struct {
	Node, BasePath string
	AvailableBytes int64
}

// scalable are the workload kinds the migration can stop and start again.
var scalable = map[string]bool{
	volumes.KindDeployment: true, volumes.KindStatefulSet: true, volumes.KindReplicaSet: true,
	volumes.KindJob: true, volumes.KindCronJob: true,
}

// checkPlan returns why the migration cannot run, or nil. A migration already under way (an
// interrupted apply) or done passes: the apply resumes or adopts it.
func checkPlan(in planInput) []problem {
	var out []problem
	ref := in.Namespace + "/" + in.ClaimName
	if in.Progress.Phase != phaseNone {
		if in.Progress.StorageClass != in.StorageClass {
			return []problem{{"storage_class", "Claim " + ref + " is being migrated to another class",
				fmt.Sprintf("A migration of %s to StorageClass %q is recorded on it (phase %s, annotation %s): set storage_class = %q so the next apply finishes it, then migrate again.",
					ref, in.Progress.StorageClass, in.Progress.Phase, AnnotationProgress, in.Progress.StorageClass)}}
		}
		if in.Class == nil && in.Volume == "" {
			out = append(out, classMissing(in))
		}
		return out
	}
	if in.Claim == nil {
		return []problem{{"claim", "Claim " + ref + " not found",
			fmt.Sprintf("There is no PersistentVolumeClaim %q in namespace %q. clusterstorage_volumes lists the claims there are.", in.ClaimName, in.Namespace)}}
	}
	c := in.Claim
	if c.Status.Phase != corev1.ClaimBound {
		out = append(out, problem{"claim", "Claim " + ref + " is not Bound",
			fmt.Sprintf("The claim is %s: only a claim bound to a volume has data to move. Migrate it once it is Bound, or change its class yourself while it holds no data.", phaseOrUnknown(c.Status.Phase))})
	}
	if c.Spec.VolumeMode != nil && *c.Spec.VolumeMode == corev1.PersistentVolumeBlock {
		out = append(out, problem{"claim", "Claim " + ref + " is a block volume",
			"Its volumeMode is Block: this resource copies files, so it moves filesystem volumes only. Copy a block volume with a tool that reads the device (dd), or with the backend's own cloning."})
	}
	if in.Class == nil && in.Volume == "" {
		out = append(out, classMissing(in))
	} else if volumes.ClassOf(c) == in.StorageClass {
		out = append(out, problem{"storage_class", "Claim " + ref + " is already on StorageClass " + in.StorageClass,
			"There is nothing to move: the claim's storageClassName is already " + in.StorageClass + "."})
	}
	out = append(out, checkWorkloads(ref, in.Workloads)...)
	if p := checkRoom(in); p != nil {
		out = append(out, *p)
	}
	return out
}

// checkRoom refuses a target class that the cluster says cannot hold the new volume: a class of
// static volumes without an Available volume as large (on the source volume's node, for a local
// source: the copy pod mounts both), CSI capacity below it, or an OpenEBS hostpath class whose
// base path has less free space on the copy's node. Classes that publish nothing pass.
func checkRoom(in planInput) *problem {
	r := in.Room
	if r == nil || in.Needed <= 0 {
		return nil
	}
	need := resource.NewQuantity(in.Needed, resource.BinarySI).String()
	if h := in.HostPath; h != nil && h.AvailableBytes < in.Needed {
		return &problem{"storage_class", "StorageClass " + r.Name + " has no room for the claim",
			fmt.Sprintf("It is an OpenEBS hostpath class: its volumes are directories under %s on the node the copy runs on, %s, "+
				"whose filesystem has %s available (df, measured over SSH), less than the %s the new volume needs. "+
				"Free space there, or move the claim to another class.", h.BasePath, h.Node,
				resource.NewQuantity(h.AvailableBytes, resource.BinarySI).String(), need)}
	}
	if a := r.Available; a != nil {
		stats, where := *a, ""
		if in.SourceNode != "" {
			stats, where = r.AvailableByNode[in.SourceNode], " on node "+in.SourceNode+", where the source volume is (the copy pod mounts both)"
		}
		if stats.LargestBytes < in.Needed {
			return &problem{"storage_class", "StorageClass " + r.Name + " has no room for the claim",
				fmt.Sprintf("It is a class of static volumes (%s) and has no Available volume of at least %s%s: %d Available, the largest %s. "+
					"Make a volume of that size for it (clusterstorage_local_pv), or set size.", r.Provisioner, need, where, stats.Count,
					resource.NewQuantity(stats.LargestBytes, resource.BinarySI).String())}
		}
	}
	if c := r.CSI; c != nil {
		if c.MaximumVolumeSizeBytes != nil && *c.MaximumVolumeSizeBytes < in.Needed {
			return &problem{"storage_class", "StorageClass " + r.Name + " has no room for the claim",
				fmt.Sprintf("Its driver publishes a largest volume of %s (CSIStorageCapacity maximumVolumeSize), less than the %s the new volume needs.",
					resource.NewQuantity(*c.MaximumVolumeSizeBytes, resource.BinarySI).String(), need)}
		}
		if c.CapacityBytes < in.Needed {
			return &problem{"storage_class", "StorageClass " + r.Name + " has no room for the claim",
				fmt.Sprintf("Its driver publishes %s free in all (CSIStorageCapacity), less than the %s the new volume needs.",
					resource.NewQuantity(c.CapacityBytes, resource.BinarySI).String(), need)}
		}
	}
	return nil
}

func classMissing(in planInput) problem {
	names := "none"
	if len(in.Classes) > 0 {
		names = strings.Join(in.Classes, ", ")
	}
	return problem{"storage_class", "StorageClass " + in.StorageClass + " not found",
		fmt.Sprintf("The cluster has no StorageClass %q to move the claim to; its classes are: %s. Create it first (clusterstorage_storage_class, or the backend that provides it) and reference it so Terraform orders the two.", in.StorageClass, names)}
}

// checkWorkloads refuses the workloads the migration cannot stop and start again, and a claim
// that several workloads share.
func checkWorkloads(ref string, ws []volumes.Workload) []problem {
	var out []problem
	for _, w := range ws {
		switch {
		case w.Kind == volumes.KindPod:
			out = append(out, problem{"claim", "Claim " + ref + " is mounted by a pod no controller owns",
				fmt.Sprintf("Pod %s mounts it and has no owner that could start it again after the migration stopped it. Run it under a Deployment or StatefulSet, or delete the pod (the data stays on the claim) and apply again.", w.Name)})
		case w.Kind == volumes.KindDaemonSet:
			out = append(out, problem{"claim", "Claim " + ref + " is mounted by a DaemonSet",
				fmt.Sprintf("DaemonSet %s mounts it: its pods run on every node that matches and cannot be scaled to zero. Stop it yourself (a nodeSelector that matches no node) and apply again; start it after the migration.", w.Name)})
		case !scalable[w.Kind]:
			out = append(out, problem{"claim", "Claim " + ref + " is mounted by a " + w.Kind,
				fmt.Sprintf("%s mounts it through a controller this resource cannot scale (it scales Deployments, StatefulSets, ReplicaSets, Jobs and CronJobs). Stop the operator's workload yourself, delete its pods, and apply again.", w)})
		}
	}
	if len(ws) > 1 {
		names := make([]string, 0, len(ws))
		for _, w := range ws {
			names = append(names, w.String())
		}
		sort.Strings(names)
		out = append(out, problem{"claim", "Claim " + ref + " is mounted by several workloads",
			fmt.Sprintf("%s all mount it: the migration stops and restarts one workload. Stop the others yourself (scale them to zero) and apply again, or migrate once only one uses the claim.", strings.Join(names, ", "))})
	}
	return out
}

func phaseOrUnknown(p corev1.PersistentVolumeClaimPhase) string {
	if p == "" {
		return "in no phase yet"
	}
	return string(p)
}
