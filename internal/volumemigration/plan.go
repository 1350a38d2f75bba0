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
	// HostPath is where a target class of directories (OpenEBS hostpath, rancher local-path)
	// puts the new volume on the node it is to be on, and the free space there (nil: not
	// measured). Unlimited says the target class's volumes are directories nothing holds to their
	// size (room.go).
	HostPath  *hostPathRoom
	Unlimited bool
	// Used is what the source's files take on its node (nil: not known; room.go).
	Used *sourceUsage
}

// hostPathRoom is where a class of directories puts a new volume on one node, and what df says
// is free there.
type hostPathRoom struct {
	// Kind names the kind of class, for messages ("an OpenEBS hostpath class").
	Kind string
	Node string
	// Config is where the class's paths were read ("namespace/name" of local-path's ConfigMap;
	// "" for a class that says its own).
	Config string
	// Paths are where the provisioner may put the volume on Node (local-path picks one at
	// random), each with the bytes available on its filesystem (df, over SSH).
	Paths []pathRoom
	// NoPath says why the class's configuration gives Node no path at all ("": it gives some).
	NoPath string
	// Quota: the class holds each volume to its size (OpenEBS hostpath's XFS or ext4 quota).
	Quota bool
}

// pathRoom is one directory of a class of directories on a node, and its free space.
type pathRoom struct {
	Path           string
	AvailableBytes int64
}

// sourceUsage is what the source's files take on their node: How is "df" (the directory is a
// filesystem of its own: its used bytes) or "du" (du -skx).
type sourceUsage struct {
	Bytes      int64
	How        string
	Node, Path string
}

func (u sourceUsage) String() string {
	how := "du -skx"
	if u.How == "df" {
		how = "df of its own filesystem"
	}
	return fmt.Sprintf("%s of %s on node %s, over SSH", how, u.Path, u.Node)
}

// quantity formats bytes as the plan's messages do ("63Mi").
func quantity(n int64) string { return resource.NewQuantity(n, resource.BinarySI).String() }

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
	if p := checkUsed(in); p != nil {
		out = append(out, *p)
	}
	return out
}

// checkRoom refuses a target class that the cluster says cannot hold the new volume: a class of
// static volumes without an Available volume as large (on the source volume's node, for a local
// source: the copy pod mounts both), CSI capacity below it, or a class of directories (OpenEBS
// hostpath, rancher local-path) that has no directory on the new volume's node, or none with
// room for the source's files there (for its size when they are not known, or when a quota holds
// the volume to it). Classes that publish nothing pass.
func checkRoom(in planInput) *problem {
	r := in.Room
	if r == nil || in.Needed <= 0 {
		return nil
	}
	need := quantity(in.Needed)
	if p := checkHostPath(in, r.Name); p != nil {
		return p
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

// hostPathWanted is the free space a class of directories needs for the new volume on its node,
// and what that is: the new volume's size, or the source's files when they take more (measured:
// a volume of such a class is a directory that nothing but a quota holds to its size; with a
// quota the files must fit in the size, checkUsed's).
func hostPathWanted(in planInput) (int64, string) {
	u := in.Used
	if u != nil && u.Bytes > in.Needed && !in.HostPath.Quota {
		return u.Bytes, fmt.Sprintf("the %s the source's files take (%s), more than the new volume's size, %s", quantity(u.Bytes), u, quantity(in.Needed))
	}
	what := fmt.Sprintf("the %s the new volume needs", quantity(in.Needed))
	if u != nil && !in.HostPath.Quota {
		what += fmt.Sprintf(" (its size: nothing holds a volume of this class to it, and it may grow to it; the source's files take %s now, so a smaller size, set with size, will do)", quantity(u.Bytes))
	}
	return in.Needed, what
}

// checkHostPath is checkRoom's part for a class of directories measured on the new volume's node.
func checkHostPath(in planInput, class string) *problem {
	h := in.HostPath
	if h == nil {
		return nil
	}
	config := ""
	if h.Config != "" {
		config = " (ConfigMap " + h.Config + ")"
	}
	if h.NoPath != "" {
		return &problem{"storage_class", "StorageClass " + class + " cannot make the new volume on node " + h.Node,
			fmt.Sprintf("It is %s, and its configuration%s says where its volumes go on each node: %s. Give node %s a path there, or move the claim to another node (target_node) or class.",
				h.Kind, config, h.NoPath, h.Node)}
	}
	want, what := hostPathWanted(in)
	if len(h.Paths) == 0 || bestPath(h).AvailableBytes >= want {
		return nil
	}
	return &problem{"storage_class", "StorageClass " + class + " has no room for the claim",
		fmt.Sprintf("It is %s: its volumes are directories under %s%s on node %s, where the new volume is to be, and %s (df, measured over SSH): less than %s. "+
			"Free space there, or move the claim to another node (target_node) or class.", h.Kind, pathNames(h), config, h.Node, pathsFree(h), what)}
}

// bestPath is the directory of h with the most room.
func bestPath(h *hostPathRoom) pathRoom {
	var best pathRoom
	for i, p := range h.Paths {
		if i == 0 || p.AvailableBytes > best.AvailableBytes {
			best = p
		}
	}
	return best
}

func pathNames(h *hostPathRoom) string {
	names := make([]string, 0, len(h.Paths))
	for _, p := range h.Paths {
		names = append(names, p.Path)
	}
	if len(names) > 1 {
		return "one of " + strings.Join(names, ", ") + " (the provisioner picks one at random)"
	}
	return strings.Join(names, "")
}

// pathsFree says what is free under each directory of h.
func pathsFree(h *hostPathRoom) string {
	if len(h.Paths) == 1 {
		return "its filesystem has " + quantity(h.Paths[0].AvailableBytes) + " available"
	}
	parts := make([]string, 0, len(h.Paths))
	for _, p := range h.Paths {
		parts = append(parts, p.Path+" has "+quantity(p.AvailableBytes))
	}
	return strings.Join(parts, ", ") + " available"
}

// checkUsed refuses a new volume smaller than the source's files (when they could be measured:
// a source that is a directory on its node, over the provider's ssh block) on a class that holds
// a volume to its size: the copy would run out of space. A class of directories without a quota
// holds what its filesystem has room for, whatever the size (checkRoom checks that room).
func checkUsed(in planInput) *problem {
	u := in.Used
	if u == nil || in.Unlimited || in.Needed <= 0 || u.Bytes <= in.Needed {
		return nil
	}
	return &problem{"size", "The claim's data does not fit in the new volume",
		fmt.Sprintf("The source's files take %s (%s), more than the %s the new volume asks for (size, else the source claim's capacity): StorageClass %s holds a volume to its size, "+
			"so the copy would run out of space. Set size to at least %s, with room for the filesystem's own use.", quantity(u.Bytes), u, quantity(in.Needed), in.StorageClass, quantity(u.Bytes))}
}

// hostPathWarning warns when a class of directories has several on the new volume's node (rancher
// local-path picks one at random) and one of them lacks the room the plan let through on
// another: the migration fails there (and is rolled back) when it is picked.
func hostPathWarning(in planInput) *problem {
	h := in.HostPath
	if h == nil || h.NoPath != "" || in.Needed <= 0 || len(h.Paths) < 2 {
		return nil
	}
	want, what := hostPathWanted(in)
	if bestPath(h).AvailableBytes < want {
		return nil // refused
	}
	var short []string
	for _, p := range h.Paths {
		if p.AvailableBytes < want {
			short = append(short, fmt.Sprintf("%s has %s available, less than %s", p.Path, quantity(p.AvailableBytes), what))
		}
	}
	if len(short) == 0 {
		return nil
	}
	return &problem{"storage_class", "StorageClass " + in.StorageClass + " may put the new volume where it has no room",
		fmt.Sprintf("It is %s, whose provisioner picks one of its directories on node %s at random: %s. The migration fails there (and is rolled back) when it is picked; "+
			"free space there, or name a directory with room in the class's nodePath parameter.", h.Kind, h.Node, strings.Join(short, "; "))}
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
	if p := hostPathWarning(in); p != nil {
		out = append(out, *p)
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
