package volumes

import (
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestMountingCases: Inventory.Mounting, the input of the storage backend's destroy guard and of
// the volume migration's plan, one rule a case: which pods count, how owners are followed, which
// templates count without a running pod, the replica counts, the nodes, the order.
func TestMountingCases(t *testing.T) {
	type inv = Inventory
	finished := func(p corev1.Pod, phase corev1.PodPhase) corev1.Pod { p.Status.Phase = phase; return p }
	inNS := func(p corev1.Pod, ns string) corev1.Pod { p.Namespace = ns; return p }
	dep := func(name string, replicas *int32, claim string) appsv1.Deployment {
		return appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Spec: appsv1.DeploymentSpec{Replicas: replicas, Template: corev1.PodTemplateSpec{Spec: mounts(claim)}}}
	}
	rs := func(name string, owners []metav1.OwnerReference, replicas *int32, claim string) appsv1.ReplicaSet {
		return appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", OwnerReferences: owners}, Spec: appsv1.ReplicaSetSpec{Replicas: replicas, Template: corev1.PodTemplateSpec{Spec: mounts(claim)}}}
	}
	sts := func(name string, replicas *int32, claim string, templates ...string) appsv1.StatefulSet {
		s := appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Spec: appsv1.StatefulSetSpec{Replicas: replicas, Template: corev1.PodTemplateSpec{Spec: mounts(claim)}}}
		for _, t := range templates {
			s.Spec.VolumeClaimTemplates = append(s.Spec.VolumeClaimTemplates, corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: t}})
		}
		return s
	}
	job := func(name string, owners []metav1.OwnerReference, parallelism *int32, suspend bool, claim string, done batchv1.JobConditionType) batchv1.Job {
		j := batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", OwnerReferences: owners}, Spec: batchv1.JobSpec{Parallelism: parallelism, Suspend: &suspend, Template: corev1.PodTemplateSpec{Spec: mounts(claim)}}}
		if done != "" {
			j.Status.Conditions = []batchv1.JobCondition{{Type: done, Status: corev1.ConditionTrue}}
		}
		return j
	}
	cron := func(name, claim string) batchv1.CronJob {
		return batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Spec: batchv1.CronJobSpec{JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: mounts(claim)}}}}}
	}
	ds := func(name, claim string) appsv1.DaemonSet {
		return appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: mounts(claim)}}}
	}

	for _, c := range []struct {
		name  string
		inv   inv
		claim string
		want  []Workload
	}{
		{name: "nothing mounts it", inv: inv{Pods: []corev1.Pod{pod("a", "n1", "other", nil)}}, claim: "data"},
		{name: "a bare pod", inv: inv{Pods: []corev1.Pod{pod("a", "n1", "data", nil)}}, claim: "data",
			want: []Workload{{Kind: KindPod, Name: "a", Replicas: 1, Nodes: []string{"n1"}}}},
		{name: "succeeded and failed pods do not count", claim: "data",
			inv: inv{Pods: []corev1.Pod{finished(pod("a", "n1", "data", nil), corev1.PodSucceeded), finished(pod("b", "n1", "data", nil), corev1.PodFailed)}}},
		{name: "a pending pod counts", claim: "data",
			inv:  inv{Pods: []corev1.Pod{finished(pod("a", "", "data", nil), corev1.PodPending)}},
			want: []Workload{{Kind: KindPod, Name: "a", Replicas: 1}}},
		{name: "pods and workloads of another namespace do not count", claim: "data",
			inv: inv{Pods: []corev1.Pod{inNS(pod("a", "n1", "data", nil), "other")}, Deployments: []appsv1.Deployment{func() appsv1.Deployment {
				d := dep("web", nil, "data")
				d.Namespace = "other"
				return d
			}()}}},
		{name: "a Deployment's pods through its ReplicaSet, each node once, sorted", claim: "data",
			inv: inv{
				Pods: []corev1.Pod{
					pod("web-3", "n2", "data", controlledBy(KindReplicaSet, "web-1")),
					pod("web-1", "n2", "data", controlledBy(KindReplicaSet, "web-1")),
					pod("web-2", "n1", "data", controlledBy(KindReplicaSet, "web-1")),
				},
				ReplicaSets: []appsv1.ReplicaSet{rs("web-1", controlledBy(KindDeployment, "web"), i32(3), "data")},
				Deployments: []appsv1.Deployment{dep("web", i32(3), "data")},
			},
			want: []Workload{{Kind: KindDeployment, Name: "web", Replicas: 3, Nodes: []string{"n1", "n2"}}}},
		{name: "a Deployment without replicas asks for one", claim: "data",
			inv:  inv{Deployments: []appsv1.Deployment{dep("web", nil, "data")}},
			want: []Workload{{Kind: KindDeployment, Name: "web", Replicas: 1}}},
		{name: "a Deployment's ReplicaSet is not counted on its own", claim: "data",
			inv:  inv{ReplicaSets: []appsv1.ReplicaSet{rs("web-1", controlledBy(KindDeployment, "web"), i32(2), "data")}, Deployments: []appsv1.Deployment{dep("web", i32(2), "data")}},
			want: []Workload{{Kind: KindDeployment, Name: "web", Replicas: 2}}},
		{name: "a bare ReplicaSet", claim: "data",
			inv: inv{
				Pods:        []corev1.Pod{pod("rs-a", "n1", "data", controlledBy(KindReplicaSet, "rs"))},
				ReplicaSets: []appsv1.ReplicaSet{rs("rs", nil, i32(2), "data")},
			},
			want: []Workload{{Kind: KindReplicaSet, Name: "rs", Replicas: 2, Nodes: []string{"n1"}}}},
		{name: "a pod of a ReplicaSet the inventory lacks names the ReplicaSet", claim: "data",
			inv:  inv{Pods: []corev1.Pod{pod("x", "n1", "data", controlledBy(KindReplicaSet, "gone"))}},
			want: []Workload{{Kind: KindReplicaSet, Name: "gone", Replicas: 0, Nodes: []string{"n1"}}}},
		{name: "an operator's pod names its custom resource", claim: "data",
			inv:  inv{Pods: []corev1.Pod{pod("pg-1", "n3", "data", controlledBy("Cluster", "pg"))}},
			want: []Workload{{Kind: "Cluster", Name: "pg", Replicas: 0, Nodes: []string{"n3"}}}},
		{name: "a StatefulSet's claim from its template, no pod running", claim: "pg-db-12",
			inv:  inv{StatefulSets: []appsv1.StatefulSet{sts("db", i32(0), "unrelated", "pg")}},
			want: []Workload{{Kind: KindStatefulSet, Name: "db", Replicas: 0}}},
		{name: "not a claim of the template: no ordinal", claim: "pg-db-",
			inv: inv{StatefulSets: []appsv1.StatefulSet{sts("db", i32(1), "unrelated", "pg")}}},
		{name: "not a claim of the template: another StatefulSet's", claim: "pg-dbx-0",
			inv: inv{StatefulSets: []appsv1.StatefulSet{sts("db", i32(1), "unrelated", "pg")}}},
		{name: "a StatefulSet mounting a shared claim in its pod template", claim: "shared",
			inv: inv{
				Pods:         []corev1.Pod{pod("db-0", "n1", "shared", controlledBy(KindStatefulSet, "db")), pod("db-1", "n2", "shared", controlledBy(KindStatefulSet, "db"))},
				StatefulSets: []appsv1.StatefulSet{sts("db", i32(2), "shared")},
			},
			want: []Workload{{Kind: KindStatefulSet, Name: "db", Replicas: 2, Nodes: []string{"n1", "n2"}}}},
		{name: "a bare Job running asks for its parallelism", claim: "data",
			inv: inv{
				Pods: []corev1.Pod{pod("j-a", "n1", "data", controlledBy(KindJob, "j"))},
				Jobs: []batchv1.Job{job("j", nil, i32(4), false, "data", "")},
			},
			want: []Workload{{Kind: KindJob, Name: "j", Replicas: 4, Nodes: []string{"n1"}}}},
		{name: "a suspended Job asks for none", claim: "data",
			inv:  inv{Jobs: []batchv1.Job{job("j", nil, nil, true, "data", "")}},
			want: []Workload{{Kind: KindJob, Name: "j", Replicas: 0}}},
		{name: "finished Jobs do not count", claim: "data",
			inv: inv{Jobs: []batchv1.Job{job("ok", nil, nil, false, "data", batchv1.JobComplete), job("bad", nil, nil, false, "data", batchv1.JobFailed)}}},
		{name: "a CronJob's Job's pod names the CronJob; its Job is not counted on its own", claim: "data",
			inv: inv{
				Pods:     []corev1.Pod{pod("n-1-a", "n2", "data", controlledBy(KindJob, "n-1"))},
				Jobs:     []batchv1.Job{job("n-1", controlledBy(KindCronJob, "n"), nil, false, "data", "")},
				CronJobs: []batchv1.CronJob{cron("n", "data")},
			},
			want: []Workload{{Kind: KindCronJob, Name: "n", Replicas: 0, Nodes: []string{"n2"}}}},
		{name: "a CronJob between runs", claim: "data", inv: inv{CronJobs: []batchv1.CronJob{cron("n", "data")}},
			want: []Workload{{Kind: KindCronJob, Name: "n", Replicas: 0}}},
		{name: "a DaemonSet without pods", claim: "data", inv: inv{DaemonSets: []appsv1.DaemonSet{ds("agent", "data")}},
			want: []Workload{{Kind: KindDaemonSet, Name: "agent", Replicas: 0}}},
		{name: "several workloads, by kind then name", claim: "data",
			inv: inv{
				Pods:        []corev1.Pod{pod("b", "n1", "data", nil), pod("a", "n2", "data", nil)},
				Deployments: []appsv1.Deployment{dep("z", i32(1), "data"), dep("y", i32(1), "data")},
				CronJobs:    []batchv1.CronJob{cron("c", "data")},
			},
			want: []Workload{
				{Kind: KindCronJob, Name: "c"},
				{Kind: KindDeployment, Name: "y", Replicas: 1},
				{Kind: KindDeployment, Name: "z", Replicas: 1},
				{Kind: KindPod, Name: "a", Replicas: 1, Nodes: []string{"n2"}},
				{Kind: KindPod, Name: "b", Replicas: 1, Nodes: []string{"n1"}},
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := c.inv.Mounting("ns", c.claim)
			if len(got) == 0 && len(c.want) == 0 {
				return
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("Mounting(ns, %s)\n got %+v\nwant %+v", c.claim, got, c.want)
			}
		})
	}
}
