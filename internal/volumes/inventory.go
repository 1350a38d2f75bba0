package volumes

import (
	"context"
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Kinds of the workloads that mount a claim. KindPod is a pod no controller owns.
const (
	KindDeployment  = "Deployment"
	KindStatefulSet = "StatefulSet"
	KindReplicaSet  = "ReplicaSet"
	KindDaemonSet   = "DaemonSet"
	KindJob         = "Job"
	KindCronJob     = "CronJob"
	KindPod         = "Pod"
)

// Workload is what mounts a claim: the top owner of its pods (a Deployment rather than its
// ReplicaSet, a CronJob rather than its Job), or the pod itself when nothing owns it.
type Workload struct {
	Kind string
	Name string
	// Replicas is the replica count the workload asks for (spec.replicas of a Deployment,
	// StatefulSet or ReplicaSet; a Job's parallelism; 1 for a pod; 0 for a CronJob, a suspended
	// Job and a DaemonSet, whose pod count the nodes decide).
	Replicas int32
	// Nodes are the nodes where its pods that mount the claim run now.
	Nodes []string
}

// String is "Kind/name".
func (w Workload) String() string { return w.Kind + "/" + w.Name }

// Inventory is one read of the workloads of a namespace (or of all namespaces), to find which
// of them mount which claim.
type Inventory struct {
	Pods         []corev1.Pod
	Deployments  []appsv1.Deployment
	StatefulSets []appsv1.StatefulSet
	ReplicaSets  []appsv1.ReplicaSet
	DaemonSets   []appsv1.DaemonSet
	Jobs         []batchv1.Job
	CronJobs     []batchv1.CronJob
}

// Scan lists the pods and workload controllers of namespace ("" for all namespaces).
func Scan(ctx context.Context, client kubernetes.Interface, namespace string) (*Inventory, error) {
	inv := &Inventory{}
	opts := metav1.ListOptions{}
	pods, err := client.CoreV1().Pods(namespace).List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	inv.Pods = pods.Items
	deps, err := client.AppsV1().Deployments(namespace).List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("listing deployments: %w", err)
	}
	inv.Deployments = deps.Items
	sts, err := client.AppsV1().StatefulSets(namespace).List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("listing statefulsets: %w", err)
	}
	inv.StatefulSets = sts.Items
	rss, err := client.AppsV1().ReplicaSets(namespace).List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("listing replicasets: %w", err)
	}
	inv.ReplicaSets = rss.Items
	dss, err := client.AppsV1().DaemonSets(namespace).List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("listing daemonsets: %w", err)
	}
	inv.DaemonSets = dss.Items
	jobs, err := client.BatchV1().Jobs(namespace).List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("listing jobs: %w", err)
	}
	inv.Jobs = jobs.Items
	cjs, err := client.BatchV1().CronJobs(namespace).List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("listing cronjobs: %w", err)
	}
	inv.CronJobs = cjs.Items
	return inv, nil
}

// Mounting returns the workloads in namespace that mount claim, sorted by kind and name: those
// whose pods mount it now (found through their owner references) and those whose pod template
// names it although no pod of theirs runs (a Deployment scaled to zero, a CronJob between
// runs, a StatefulSet's volumeClaimTemplates).
func (inv *Inventory) Mounting(namespace, claim string) []Workload {
	found := map[string]*Workload{}
	add := func(kind, name string, replicas int32) *Workload {
		key := kind + "/" + name
		if w := found[key]; w != nil {
			return w
		}
		w := &Workload{Kind: kind, Name: name, Replicas: replicas}
		found[key] = w
		return w
	}
	for i := range inv.Pods {
		p := &inv.Pods[i]
		if p.Namespace != namespace || !podMounts(&p.Spec, claim) || podDone(p) {
			continue
		}
		kind, name := inv.topOwner(p)
		w := add(kind, name, inv.replicas(namespace, kind, name))
		if p.Spec.NodeName != "" && !contains(w.Nodes, p.Spec.NodeName) {
			w.Nodes = append(w.Nodes, p.Spec.NodeName)
		}
	}
	for _, d := range inv.Deployments {
		if d.Namespace == namespace && podMounts(&d.Spec.Template.Spec, claim) {
			add(KindDeployment, d.Name, replicasOf(d.Spec.Replicas))
		}
	}
	for _, s := range inv.StatefulSets {
		if s.Namespace == namespace && (podMounts(&s.Spec.Template.Spec, claim) || claimOfTemplate(&s, claim)) {
			add(KindStatefulSet, s.Name, replicasOf(s.Spec.Replicas))
		}
	}
	for _, r := range inv.ReplicaSets {
		if r.Namespace == namespace && metav1.GetControllerOf(&r) == nil && podMounts(&r.Spec.Template.Spec, claim) {
			add(KindReplicaSet, r.Name, replicasOf(r.Spec.Replicas))
		}
	}
	for _, d := range inv.DaemonSets {
		if d.Namespace == namespace && podMounts(&d.Spec.Template.Spec, claim) {
			add(KindDaemonSet, d.Name, 0)
		}
	}
	for _, j := range inv.Jobs {
		if j.Namespace == namespace && metav1.GetControllerOf(&j) == nil && podMounts(&j.Spec.Template.Spec, claim) && !jobFinished(&j) {
			add(KindJob, j.Name, jobReplicas(&j))
		}
	}
	for _, c := range inv.CronJobs {
		if c.Namespace == namespace && podMounts(&c.Spec.JobTemplate.Spec.Template.Spec, claim) {
			add(KindCronJob, c.Name, 0)
		}
	}
	out := make([]Workload, 0, len(found))
	for _, w := range found {
		sort.Strings(w.Nodes)
		out = append(out, *w)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// topOwner follows a pod's controller references up to the workload a user manages: a
// ReplicaSet to its Deployment, a Job to its CronJob. A controller of another kind (an
// operator's custom resource) is returned as it is; a pod without one is KindPod.
func (inv *Inventory) topOwner(p *corev1.Pod) (kind, name string) {
	ref := metav1.GetControllerOf(p)
	if ref == nil {
		return KindPod, p.Name
	}
	switch ref.Kind {
	case KindReplicaSet:
		for i := range inv.ReplicaSets {
			rs := &inv.ReplicaSets[i]
			if rs.Namespace == p.Namespace && rs.Name == ref.Name {
				if up := metav1.GetControllerOf(rs); up != nil {
					return up.Kind, up.Name
				}
			}
		}
	case KindJob:
		for i := range inv.Jobs {
			j := &inv.Jobs[i]
			if j.Namespace == p.Namespace && j.Name == ref.Name {
				if up := metav1.GetControllerOf(j); up != nil {
					return up.Kind, up.Name
				}
			}
		}
	}
	return ref.Kind, ref.Name
}

// replicas is the replica count a workload asks for (see Workload.Replicas).
func (inv *Inventory) replicas(namespace, kind, name string) int32 {
	switch kind {
	case KindPod:
		return 1
	case KindDeployment:
		for _, d := range inv.Deployments {
			if d.Namespace == namespace && d.Name == name {
				return replicasOf(d.Spec.Replicas)
			}
		}
	case KindStatefulSet:
		for _, s := range inv.StatefulSets {
			if s.Namespace == namespace && s.Name == name {
				return replicasOf(s.Spec.Replicas)
			}
		}
	case KindReplicaSet:
		for _, r := range inv.ReplicaSets {
			if r.Namespace == namespace && r.Name == name {
				return replicasOf(r.Spec.Replicas)
			}
		}
	case KindJob:
		for i := range inv.Jobs {
			if inv.Jobs[i].Namespace == namespace && inv.Jobs[i].Name == name {
				return jobReplicas(&inv.Jobs[i])
			}
		}
	}
	return 0
}

// podMounts reports whether a pod spec mounts claim as a volume.
func podMounts(spec *corev1.PodSpec, claim string) bool {
	for _, v := range spec.Volumes {
		if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim {
			return true
		}
	}
	return false
}

// claimOfTemplate reports whether claim is one a StatefulSet made from its volumeClaimTemplates:
// <template>-<statefulset>-<ordinal>.
func claimOfTemplate(s *appsv1.StatefulSet, claim string) bool {
	for _, t := range s.Spec.VolumeClaimTemplates {
		prefix := t.Name + "-" + s.Name + "-"
		if rest, ok := strings.CutPrefix(claim, prefix); ok && rest != "" && strings.Trim(rest, "0123456789") == "" {
			return true
		}
	}
	return false
}

func podDone(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

func jobFinished(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func jobReplicas(j *batchv1.Job) int32 {
	if j.Spec.Suspend != nil && *j.Spec.Suspend {
		return 0
	}
	return replicasOf(j.Spec.Parallelism)
}

// replicasOf is a replicas field's value; unset means 1, as in the API.
func replicasOf(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
