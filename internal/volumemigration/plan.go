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
	// Actors drive the workloads' replica counts besides this provider (actors.go);
	// ControllersPaused says the user paused them. ClaimOwners own the claim's manifest.
	// Budgets are the PodDisruptionBudgets the stop violates. Read for a new migration only.
	Actors            []actor
	ControllersPaused bool
	ClaimOwners       []actor
	Budgets           []string
	// Quota is what a ResourceQuota of the namespace leaves for the temporary claim (nil: no
	// quota limits it).
	Quota *quotaRoom
	// Room is what the cluster says the target class can still provision (nil: not read);
	// Needed the bytes the new volume asks for; SourceNode the node the source volume lives on
	// ("" when any node can mount it).
	Room       *capacity.ClassCapacity
	Needed     int64
	SourceNode string
	// TargetNode is target_node ("": not set); TargetNodeFound says the cluster has it, Nodes
	// are the names of the nodes it has (read when TargetNode is set).
	TargetNode      string
	TargetNodeFound bool
	Nodes           []string
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
	if p := checkTargetNode(in); p != nil {
		out = append(out, *p)
	}
	if in.Class == nil && in.Volume == "" {
		out = append(out, classMissing(in))
	} else if volumes.ClassOf(c) == in.StorageClass && (in.TargetNode == "" || in.TargetNode == in.SourceNode) && (in.Volume == "" || c.Spec.VolumeName == in.Volume) {
		out = append(out, problem{"storage_class", "Claim " + ref + " is already on StorageClass " + in.StorageClass,
			"There is nothing to move: the claim's storageClassName is already " + in.StorageClass + "."})
	}
	out = append(out, checkWorkloads(ref, in.Workloads)...)
	if p := checkActors(ref, in); p != nil {
		out = append(out, *p)
	}
	if p := checkQuota(ref, in); p != nil {
		out = append(out, *p)
	}
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
		switch {
		case in.TargetNode != "":
			stats, where = r.AvailableByNode[in.TargetNode], " on node "+in.TargetNode+" (target_node)"
		case in.SourceNode != "":
			stats, where = r.AvailableByNode[in.SourceNode], " on node "+in.SourceNode+", where the source volume is (the copy pod mounts both; set target_node to move it to another node)"
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

// checkTargetNode refuses a target_node the cluster does not have.
func checkTargetNode(in planInput) *problem {
	if in.TargetNode == "" || in.TargetNodeFound {
		return nil
	}
	names := "none"
	if len(in.Nodes) > 0 {
		names = strings.Join(in.Nodes, ", ")
	}
	return &problem{"target_node", "Node " + in.TargetNode + " not found",
		fmt.Sprintf("The cluster has no node %q to put the new volume on; its nodes are: %s.", in.TargetNode, names)}
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

// checkActors refuses a workload whose replica count another actor drives (Argo CD or Flux
// self-heal, KEDA, an operator) until the user says they are paused: such an actor can start the
// workload on the source volume while it is stopped, and the swap would then leave its writes
// behind. The apply checks again before the swap and rolls back; refusing at plan saves the copy.
func checkActors(ref string, in planInput) *problem {
	if in.ControllersPaused {
		return nil
	}
	var names []string
	for _, a := range in.Actors {
		if a.Scales {
			names = append(names, a.String())
		}
	}
	if len(names) == 0 {
		return nil
	}
	return &problem{"controllers_paused", "Claim " + ref + " is mounted by a workload another controller starts",
		fmt.Sprintf("%s can scale the workload back up while the migration has it stopped, and what it writes then to the source volume would not be on the new one. "+
			"Pause it for the migration (Argo CD: disable self-heal/auto-sync of the application; Flux: flux suspend; KEDA: the annotation autoscaling.keda.sh/paused; "+
			"an operator: its own pause or scale-to-zero setting), then set controllers_paused = true. The apply checks again right before the swap "+
			"and rolls back if anything started the workload.", strings.Join(names, "; "))}
}

// planWarnings are what the user should know before the migration runs, but that does not stop
// it: owners of the claim's manifest, HPAs, PodDisruptionBudgets the stop violates.
func planWarnings(in planInput) []problem {
	if in.Progress.Phase != phaseNone || in.Claim == nil {
		return nil
	}
	ref := in.Namespace + "/" + in.ClaimName
	var out []problem
	for _, a := range in.ClaimOwners {
		out = append(out, problem{"storage_class", "Claim " + ref + " is managed by " + a.Tool + ": change its class there too", claimOwnerAdvice(a, in.StorageClass)})
	}
	for _, a := range in.Actors {
		if a.Tool == "HorizontalPodAutoscaler" {
			out = append(out, problem{"claim", "HorizontalPodAutoscaler " + a.Name + " targets " + a.On,
				"An HPA does not scale a workload up from zero replicas, so it does not start it during the migration; it resumes scaling once the migration starts the workload again."})
		}
	}
	for _, b := range in.Budgets {
		out = append(out, problem{"claim", "The migration stops pods a PodDisruptionBudget protects",
			b + ": the migration scales the workload to zero (not an eviction, so the budget does not block it) for the delta copy and the swap; expect its alerts."})
	}
	return out
}

// quotaRoom is what a namespace's ResourceQuotas leave for one more claim of a class.
type quotaRoom struct {
	Quota    string
	Resource string
	// Left is what remains under the quota's hard limit (bytes, or claims).
	Left int64
}

// checkQuota refuses a migration whose temporary claim a ResourceQuota of the namespace would
// refuse: it counts against requests.storage and persistentvolumeclaims (and their per-class
// forms) until the swap.
func checkQuota(ref string, in planInput) *problem {
	q := in.Quota
	if q == nil {
		return nil
	}
	need := in.Needed
	what := resource.NewQuantity(need, resource.BinarySI).String()
	if strings.HasSuffix(q.Resource, "persistentvolumeclaims") {
		need, what = 1, "one more claim"
	}
	if q.Left >= need {
		return nil
	}
	return &problem{"storage_class", "ResourceQuota " + q.Quota + " leaves no room for the migration's temporary claim",
		fmt.Sprintf("Until the swap, claim %s and the new claim on %s both count against %s of ResourceQuota %s, which has %d left; the new claim needs %s. "+
			"Raise the quota for the migration (the temporary claim is deleted at the swap), or free room in the namespace.", ref, in.StorageClass, q.Resource, q.Quota, q.Left, what)}
}
