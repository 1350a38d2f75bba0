package helm

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

// Footprint sums what the pods of a release's workloads ask for and use.
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

// ReleaseFootprint finds the pods of the Deployments, DaemonSets and
// StatefulSets in a release's manifest (through each workload's selector) and
// sums their resources. Init containers are not counted.
func (c *Client) ReleaseFootprint(ctx context.Context, st *Status) (*Footprint, error) {
	cs, err := c.Clientset()
	if err != nil {
		return nil, err
	}
	objs, err := st.Objects()
	if err != nil {
		return nil, err
	}
	pods, err := workloadPods(ctx, cs, Workloads(objs, st.Namespace))
	if err != nil {
		return nil, err
	}
	fp := SumPods(pods)
	usage, known, err := PodsMemoryUsage(ctx, cs, pods)
	if err != nil {
		c.log("reading pod metrics: %v", err)
	}
	fp.MemoryUsageBytes, fp.MemoryUsageKnown = usage, known
	return fp, nil
}

// SumPods adds up the container counts and resources of pods. Pods that
// have finished (Succeeded or Failed) or are being deleted (the old pods of a
// rollout) are skipped.
func SumPods(pods []corev1.Pod) *Footprint {
	fp := &Footprint{}
	for _, p := range pods {
		if kube.PodFinished(&p) || p.DeletionTimestamp != nil {
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

func workloadPods(ctx context.Context, cs kubernetes.Interface, workloads []Object) ([]corev1.Pod, error) {
	seen := map[types.UID]bool{}
	var out []corev1.Pod
	for _, w := range workloads {
		var sel *metav1.LabelSelector
		var err error
		switch w.Kind {
		case "Deployment":
			d, e := cs.AppsV1().Deployments(w.Namespace).Get(ctx, w.Name, metav1.GetOptions{})
			err = e
			if e == nil {
				sel = d.Spec.Selector
			}
		case "DaemonSet":
			d, e := cs.AppsV1().DaemonSets(w.Namespace).Get(ctx, w.Name, metav1.GetOptions{})
			err = e
			if e == nil {
				sel = d.Spec.Selector
			}
		case "StatefulSet":
			d, e := cs.AppsV1().StatefulSets(w.Namespace).Get(ctx, w.Name, metav1.GetOptions{})
			err = e
			if e == nil {
				sel = d.Spec.Selector
			}
		default:
			continue
		}
		if err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("reading %s: %w", w, err)
		}
		selector, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil || selector.Empty() || selector == labels.Nothing() {
			continue
		}
		list, err := cs.CoreV1().Pods(w.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
		if err != nil {
			return nil, fmt.Errorf("listing pods of %s: %w", w, err)
		}
		for _, p := range list.Items {
			if !seen[p.UID] {
				seen[p.UID] = true
				out = append(out, p)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Namespace+"/"+out[i].Name < out[j].Namespace+"/"+out[j].Name })
	return out, nil
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
