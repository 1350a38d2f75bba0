package kube

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func ctr(cpu, mem, memLimit string) corev1.Container {
	c := corev1.Container{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}}
	if cpu != "" {
		c.Resources.Requests[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		c.Resources.Requests[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	if memLimit != "" {
		c.Resources.Limits[corev1.ResourceMemory] = resource.MustParse(memLimit)
	}
	return c
}

func TestSumPods(t *testing.T) {
	pods := []corev1.Pod{
		{Spec: corev1.PodSpec{Containers: []corev1.Container{ctr("100m", "64Mi", "128Mi"), ctr("0.5", "1Gi", "")}}, Status: corev1.PodStatus{Phase: corev1.PodRunning}},
		{Spec: corev1.PodSpec{Containers: []corev1.Container{ctr("", "", "")}, InitContainers: []corev1.Container{ctr("1", "1Gi", "1Gi")}}, Status: corev1.PodStatus{Phase: corev1.PodPending}},
		{Spec: corev1.PodSpec{Containers: []corev1.Container{ctr("1", "1Gi", "1Gi")}}, Status: corev1.PodStatus{Phase: corev1.PodSucceeded}},
	}
	got := SumPods(pods)
	want := Footprint{Pods: 2, Containers: 3, CPURequestsMilli: 600, MemoryRequestsBytes: 64<<20 + 1<<30, MemoryLimitsBytes: 128 << 20}
	if *got != want {
		t.Fatalf("got %+v\nwant %+v", *got, want)
	}
	if z := SumPods(nil); *z != (Footprint{}) {
		t.Fatalf("no pods: %+v", *z)
	}
}
