package kube

import (
	"context"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes"
)

// Footprint sums what a set of pods (a release's workloads, a backend's namespace) ask for and
// use.
type Footprint struct {
	Pods       int
	Containers int
	// CPURequestsMilli is the sum of the containers' CPU requests.
	CPURequestsMilli int64
	// MemoryRequestsBytes and MemoryLimitsBytes sum the containers'
	// requests and limits (a container without a limit adds nothing).
	MemoryRequestsBytes int64
	MemoryLimitsBytes   int64
	// MemoryUsageBytes is the working set reported by metrics.k8s.io, when
	// the cluster serves it (MemoryUsageKnown).
	MemoryUsageBytes int64
	MemoryUsageKnown bool
}

// SumPods adds up the container counts and resources of pods. Pods that
// have finished (Succeeded or Failed) or are being deleted (the old pods of a
// rollout) are skipped.
func SumPods(pods []corev1.Pod) *Footprint {
	fp := &Footprint{}
	for _, p := range pods {
		if PodFinished(&p) || p.DeletionTimestamp != nil {
			continue
		}
		fp.Pods++
		for _, ctr := range p.Spec.Containers {
			fp.Containers++
			if q, ok := ctr.Resources.Requests[corev1.ResourceCPU]; ok {
				fp.CPURequestsMilli += q.MilliValue()
			}
			if q, ok := ctr.Resources.Requests[corev1.ResourceMemory]; ok {
				fp.MemoryRequestsBytes += q.Value()
			}
			if q, ok := ctr.Resources.Limits[corev1.ResourceMemory]; ok {
				fp.MemoryLimitsBytes += q.Value()
			}
		}
	}
	return fp
}

// PodsMemoryUsage sums the working set of pods from metrics.k8s.io. known is
// false when the API is not served (no metrics-server).
func PodsMemoryUsage(ctx context.Context, cs kubernetes.Interface, pods []corev1.Pod) (int64, bool, error) {
	if len(pods) == 0 {
		return 0, false, nil
	}
	if !MetricsAPIServed(cs) {
		return 0, false, nil
	}
	var total int64
	for _, p := range pods {
		raw, err := cs.Discovery().RESTClient().Get().
			AbsPath("/apis/metrics.k8s.io/v1beta1/namespaces", p.Namespace, "pods", p.Name).
			DoRaw(ctx)
		if err != nil {
			if apierrors.IsNotFound(err) {
				continue // too new to have been scraped
			}
			return 0, false, err
		}
		var m struct {
			Containers []struct {
				Usage map[string]string `json:"usage"`
			} `json:"containers"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			return 0, false, err
		}
		for _, ctr := range m.Containers {
			if s, ok := ctr.Usage["memory"]; ok {
				q, err := resource.ParseQuantity(s)
				if err != nil {
					return 0, false, err
				}
				total += q.Value()
			}
		}
	}
	return total, true, nil
}

// MetricsAPIServed reports whether the cluster serves the resource metrics API
// (metrics.k8s.io/v1beta1, e.g. from metrics-server).
func MetricsAPIServed(cs kubernetes.Interface) bool {
	_, err := cs.Discovery().ServerResourcesForGroupVersion("metrics.k8s.io/v1beta1")
	return err == nil
}
