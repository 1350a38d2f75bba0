package volumemigration

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/volumes"
)

// owners reads the live replica counts (a Job's or CronJob's suspend) of the workloads that mount
// the claim, to record before they are scaled down. Never nil: an empty list says "none".
func (m *Migrator) owners(ctx context.Context, ws []volumes.Workload) ([]owner, error) {
	out := []owner{}
	ns := m.Spec.Namespace
	for _, w := range ws {
		o := owner{Kind: w.Kind, Name: w.Name}
		var err error
		switch w.Kind {
		case volumes.KindDeployment:
			var d *appsv1.Deployment
			if d, err = m.Client.AppsV1().Deployments(ns).Get(ctx, w.Name, metav1.GetOptions{}); err == nil {
				o.Replicas = replicas(d.Spec.Replicas)
			}
		case volumes.KindStatefulSet:
			var s *appsv1.StatefulSet
			if s, err = m.Client.AppsV1().StatefulSets(ns).Get(ctx, w.Name, metav1.GetOptions{}); err == nil {
				o.Replicas = replicas(s.Spec.Replicas)
			}
		case volumes.KindReplicaSet:
			var r *appsv1.ReplicaSet
			if r, err = m.Client.AppsV1().ReplicaSets(ns).Get(ctx, w.Name, metav1.GetOptions{}); err == nil {
				o.Replicas = replicas(r.Spec.Replicas)
			}
		case volumes.KindJob:
			j, jerr := m.Client.BatchV1().Jobs(ns).Get(ctx, w.Name, metav1.GetOptions{})
			if err = jerr; err == nil {
				o.Suspended = j.Spec.Suspend != nil && *j.Spec.Suspend
			}
		case volumes.KindCronJob:
			c, cerr := m.Client.BatchV1().CronJobs(ns).Get(ctx, w.Name, metav1.GetOptions{})
			if err = cerr; err == nil {
				o.Suspended = c.Spec.Suspend != nil && *c.Spec.Suspend
			}
		default:
			return nil, fmt.Errorf("%s mounts claim %s and cannot be scaled by this resource", w, m.ref())
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", w, err)
		}
		out = append(out, o)
	}
	return out, nil
}

// scale stops (down) or restarts an owner: replicas 0 or its recorded count; a Job or CronJob
// suspended, or given back its recorded suspend. A CronJob's Jobs that run now keep running
// until waitUnmounted sees them end.
func (m *Migrator) scale(ctx context.Context, o owner, down bool) error {
	ns := m.Spec.Namespace
	var patch []byte
	switch o.Kind {
	case volumes.KindDeployment, volumes.KindStatefulSet, volumes.KindReplicaSet:
		n := o.Replicas
		if down {
			n = 0
		}
		patch = fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, n)
	case volumes.KindJob, volumes.KindCronJob:
		patch = fmt.Appendf(nil, `{"spec":{"suspend":%t}}`, down || o.Suspended)
	default:
		return fmt.Errorf("cannot scale %s/%s", o.Kind, o.Name)
	}
	var err error
	switch o.Kind {
	case volumes.KindDeployment:
		_, err = m.Client.AppsV1().Deployments(ns).Patch(ctx, o.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	case volumes.KindStatefulSet:
		_, err = m.Client.AppsV1().StatefulSets(ns).Patch(ctx, o.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	case volumes.KindReplicaSet:
		_, err = m.Client.AppsV1().ReplicaSets(ns).Patch(ctx, o.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	case volumes.KindJob:
		_, err = m.Client.BatchV1().Jobs(ns).Patch(ctx, o.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	case volumes.KindCronJob:
		_, err = m.Client.BatchV1().CronJobs(ns).Patch(ctx, o.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	}
	if err != nil && !kube.IsNotFound(err) {
		what := "restarting"
		if down {
			what = "stopping"
		}
		return fmt.Errorf("%s %s/%s in %s: %w", what, o.Kind, o.Name, ns, err)
	}
	return nil
}

// waitReady waits until a restarted Deployment, StatefulSet or ReplicaSet has all its replicas
// Ready on its current template. Jobs and CronJobs are not waited for.
func (m *Migrator) waitReady(ctx context.Context, o owner) error {
	ns := m.Spec.Namespace
	what := fmt.Sprintf("%s %s/%s to have %d Ready replicas", o.Kind, ns, o.Name, o.Replicas)
	wait := kube.Wait{What: what, Timeout: time.Until(deadline(ctx))}
	var err error
	switch o.Kind {
	case volumes.KindDeployment:
		_, err = kube.WaitFor(ctx, m.Client.AppsV1().Deployments(ns), o.Name, nil, wait, func(d *appsv1.Deployment) (bool, string, error) {
			if d == nil {
				return true, "", nil // deleted meanwhile: nothing to wait for
			}
			s := d.Status
			ok := s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == o.Replicas && s.ReadyReplicas == o.Replicas && s.Replicas == o.Replicas
			return ok, fmt.Sprintf("%d of %d Ready", s.ReadyReplicas, o.Replicas), nil
		})
	case volumes.KindStatefulSet:
		_, err = kube.WaitFor(ctx, m.Client.AppsV1().StatefulSets(ns), o.Name, nil, wait, func(s *appsv1.StatefulSet) (bool, string, error) {
			if s == nil {
				return true, "", nil
			}
			ok := s.Status.ObservedGeneration >= s.Generation && s.Status.ReadyReplicas == o.Replicas && s.Status.Replicas == o.Replicas
			return ok, fmt.Sprintf("%d of %d Ready", s.Status.ReadyReplicas, o.Replicas), nil
		})
	case volumes.KindReplicaSet:
		_, err = kube.WaitFor(ctx, m.Client.AppsV1().ReplicaSets(ns), o.Name, nil, wait, func(r *appsv1.ReplicaSet) (bool, string, error) {
			if r == nil {
				return true, "", nil
			}
			ok := r.Status.ObservedGeneration >= r.Generation && r.Status.ReadyReplicas == o.Replicas && r.Status.Replicas == o.Replicas
			return ok, fmt.Sprintf("%d of %d Ready", r.Status.ReadyReplicas, o.Replicas), nil
		})
	}
	return err
}

func replicas(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}
