package volumes

import (
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func controlledBy(kind, name string) []metav1.OwnerReference {
	yes := true
	return []metav1.OwnerReference{{Kind: kind, Name: name, Controller: &yes}}
}

func mounts(claim string) corev1.PodSpec {
	return corev1.PodSpec{Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}}
}

func pod(name, node, claim string, owners []metav1.OwnerReference) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", OwnerReferences: owners}, Spec: mounts(claim)}
	p.Spec.NodeName = node
	p.Status.Phase = corev1.PodRunning
	return p
}

func i32(v int32) *int32 { return &v }

func TestMounting(t *testing.T) {
	inv := &Inventory{
		Pods: []corev1.Pod{
			pod("web-1", "n1", "data", controlledBy(KindReplicaSet, "web-abc")),
			pod("web-2", "n2", "data", controlledBy(KindReplicaSet, "web-abc")),
			pod("debug", "n1", "scratch", nil),
			pod("job-x", "n3", "backup", controlledBy(KindJob, "nightly-1")),
			pod("db-0", "n2", "pg-db-0", controlledBy(KindStatefulSet, "db")),
			pod("agent-x", "n1", "logs", controlledBy(KindDaemonSet, "agent")),
		},
		Deployments: []appsv1.Deployment{
			{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}, Spec: appsv1.DeploymentSpec{Replicas: i32(2), Template: corev1.PodTemplateSpec{Spec: mounts("data")}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "idle", Namespace: "ns"}, Spec: appsv1.DeploymentSpec{Replicas: i32(0), Template: corev1.PodTemplateSpec{Spec: mounts("cold")}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere", Namespace: "other"}, Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: mounts("data")}}},
		},
		ReplicaSets: []appsv1.ReplicaSet{{ObjectMeta: metav1.ObjectMeta{Name: "web-abc", Namespace: "ns", OwnerReferences: controlledBy(KindDeployment, "web")}}},
		StatefulSets: []appsv1.StatefulSet{{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns"}, Spec: appsv1.StatefulSetSpec{Replicas: i32(3),
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "pg"}}}}}},
		Jobs:     []batchv1.Job{{ObjectMeta: metav1.ObjectMeta{Name: "nightly-1", Namespace: "ns", OwnerReferences: controlledBy(KindCronJob, "nightly")}}},
		CronJobs: []batchv1.CronJob{{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "ns"}}},
	}
	for claim, want := range map[string][]Workload{
		"data":    {{Kind: KindDeployment, Name: "web", Replicas: 2, Nodes: []string{"n1", "n2"}}},
		"scratch": {{Kind: KindPod, Name: "debug", Replicas: 1, Nodes: []string{"n1"}}},
		"backup":  {{Kind: KindCronJob, Name: "nightly", Replicas: 0, Nodes: []string{"n3"}}},
		"pg-db-0": {{Kind: KindStatefulSet, Name: "db", Replicas: 3, Nodes: []string{"n2"}}},
		"pg-db-7": {{Kind: KindStatefulSet, Name: "db", Replicas: 3}},
		"pg-db-x": {},
		"cold":    {{Kind: KindDeployment, Name: "idle", Replicas: 0}},
		"logs":    {{Kind: KindDaemonSet, Name: "agent", Replicas: 0, Nodes: []string{"n1"}}},
		"none":    {},
	} {
		got := inv.Mounting("ns", claim)
		if !reflect.DeepEqual(got, want) && (len(got) != 0 || len(want) != 0) {
			t.Errorf("%s: got %+v, want %+v", claim, got, want)
		}
	}
}

func TestNodeAndDriver(t *testing.T) {
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{provisionedByAnnotation: "rancher.io/local-path"}},
		Spec: corev1.PersistentVolumeSpec{NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: HostnameLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{"node-2"}}}}}}}},
	}
	if got := Node(pv); got != "node-2" {
		t.Errorf("Node = %q", got)
	}
	if got := Driver(pv, nil); got != "rancher.io/local-path" {
		t.Errorf("Driver = %q", got)
	}
	pv.Spec.CSI = &corev1.CSIPersistentVolumeSource{Driver: "driver.longhorn.io"}
	if got := Driver(pv, nil); got != "driver.longhorn.io" {
		t.Errorf("Driver = %q", got)
	}
	if Node(nil) != "" || Node(&corev1.PersistentVolume{}) != "" {
		t.Error("a volume without node affinity has a node")
	}
}

func TestMigratedFrom(t *testing.T) {
	for v, want := range map[string]string{
		`{"phase":"done","sourceClass":"longhorn"}`:    "longhorn",
		`{"phase":"stopped","sourceClass":"longhorn"}`: "",
		`not json`: "",
	} {
		c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{MigrationAnnotation: v}}}
		if got := MigratedFrom(c); got != want {
			t.Errorf("%s: %q, want %q", v, got, want)
		}
	}
	if got := MigratedFrom(&corev1.PersistentVolumeClaim{}); got != "" {
		t.Errorf("no record: %q", got)
	}
}
