package volumemigration

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/volumes"
)

// AnnotationStopped is on a workload that migrations stopped: what it asked for before the
// first of them (replicas, a Job's or CronJob's suspend) and the claims whose migrations keep it
// stopped. Several claims of one workload (a StatefulSet's, migrated with for_each) are migrated
// at once: the first migration records the count and scales to zero, in one update; each one
// that ends takes its claim off the list, and the last one gives the workload its count back.
const AnnotationStopped = "clusterstorage.io/migration-stopped"

type stopRecord struct {
	Replicas  int32    `json:"replicas"`
	Suspended bool     `json:"suspended,omitempty"`
	Claims    []string `json:"claims"`
	// Retention is a StatefulSet's claim retention policy before the stop set it to Retain
	// (whenScaled: Delete would delete the claims at the scale-down); nil when it deleted none.
	Retention *appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy `json:"retention,omitempty"`
}

// workload is the part of a Deployment, StatefulSet, ReplicaSet, Job or CronJob the migration
// edits: its annotations and replicas (nil for a Job or CronJob) or suspend (nil for the others),
// and a StatefulSet's claim retention policy (nil for the others).
type workload struct {
	meta      *metav1.ObjectMeta
	replicas  **int32
	suspend   **bool
	retention **appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy
}

// edit reads an owner, lets change edit it, and writes it back, again on a conflict (another
// actor wrote the workload between the read and the write: the change is made again on what it
// wrote). A workload that is gone is no error: there is nothing to stop or start.
func (m *Migrator) edit(ctx context.Context, o owner, change func(w workload) (bool, error)) error {
	ns := m.Spec.Namespace
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		switch o.Kind {
		case volumes.KindDeployment:
			return getChangeUpdate(ctx, m.Client.AppsV1().Deployments(ns), o.Name, change, func(d *appsv1.Deployment) workload {
				return workload{meta: &d.ObjectMeta, replicas: &d.Spec.Replicas}
			})
		case volumes.KindStatefulSet:
			return getChangeUpdate(ctx, m.Client.AppsV1().StatefulSets(ns), o.Name, change, func(s *appsv1.StatefulSet) workload {
				return workload{meta: &s.ObjectMeta, replicas: &s.Spec.Replicas, retention: &s.Spec.PersistentVolumeClaimRetentionPolicy}
			})
		case volumes.KindReplicaSet:
			return getChangeUpdate(ctx, m.Client.AppsV1().ReplicaSets(ns), o.Name, change, func(r *appsv1.ReplicaSet) workload {
				return workload{meta: &r.ObjectMeta, replicas: &r.Spec.Replicas}
			})
		case volumes.KindJob:
			return getChangeUpdate(ctx, m.Client.BatchV1().Jobs(ns), o.Name, change, func(j *batchv1.Job) workload {
				return workload{meta: &j.ObjectMeta, suspend: &j.Spec.Suspend}
			})
		case volumes.KindCronJob:
			return getChangeUpdate(ctx, m.Client.BatchV1().CronJobs(ns), o.Name, change, func(c *batchv1.CronJob) workload {
				return workload{meta: &c.ObjectMeta, suspend: &c.Spec.Suspend}
			})
		}
		return fmt.Errorf("%s/%s mounts claim %s and cannot be scaled by this resource", o.Kind, o.Name, m.ref())
	})
	if kube.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s/%s in %s: %w", o.Kind, o.Name, ns, err)
	}
	return nil
}

// getUpdater is the part of a typed client-go client of one kind that edit uses.
type getUpdater[T any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

// getChangeUpdate reads the object name through c, lets change edit the workload view shows of
// it, and writes it back when change says so. One attempt: edit retries it on a conflict.
func getChangeUpdate[T any](ctx context.Context, c getUpdater[T], name string, change func(workload) (bool, error), view func(T) workload) error {
	obj, err := c.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if write, err := change(view(obj)); err != nil || !write {
		return err
	}
	_, err = c.Update(ctx, obj, metav1.UpdateOptions{})
	return err
}

func stopRecordOf(meta *metav1.ObjectMeta) (*stopRecord, error) {
	v, ok := meta.Annotations[AnnotationStopped]
	if !ok {
		return nil, nil
	}
	var r stopRecord
	if err := json.Unmarshal([]byte(v), &r); err != nil {
		return nil, fmt.Errorf("annotation %s is not what this provider writes (%v): %q", AnnotationStopped, err, v)
	}
	return &r, nil
}

func setStopRecord(meta *metav1.ObjectMeta, r *stopRecord) error {
	if r == nil {
		delete(meta.Annotations, AnnotationStopped)
		return nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	meta.Annotations[AnnotationStopped] = string(b)
	return nil
}

// owners reads what the workloads that mount the claim ask for before the migration stops them:
// their live replica count (a Job's or CronJob's suspend), or, when other migrations stopped
// them already, the count those recorded. Never nil: an empty list says "none".
func (m *Migrator) owners(ctx context.Context, ws []volumes.Workload) ([]owner, error) {
	out := []owner{}
	for _, w := range ws {
		o := owner{Kind: w.Kind, Name: w.Name}
		err := m.edit(ctx, o, func(wl workload) (bool, error) {
			rec, err := stopRecordOf(wl.meta)
			switch {
			case err != nil:
				return false, err
			case rec != nil:
				o.Replicas, o.Suspended = rec.Replicas, rec.Suspended
			case wl.replicas != nil:
				o.Replicas = replicas(*wl.replicas)
			default:
				o.Suspended = *wl.suspend != nil && **wl.suspend
			}
			return false, nil
		})
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

// stop scales an owner to zero (suspends a Job or CronJob), recording what it asked for and
// this claim on it in the same update. A CronJob's Jobs that run now keep running until
// waitUnmounted sees them end.
func (m *Migrator) stop(ctx context.Context, o owner) error {
	return m.edit(ctx, o, func(wl workload) (bool, error) {
		rec, err := stopRecordOf(wl.meta)
		if err != nil {
			return false, err
		}
		if rec == nil {
			rec = &stopRecord{Claims: []string{}}
			if wl.replicas != nil {
				rec.Replicas = replicas(*wl.replicas)
			} else {
				rec.Suspended = *wl.suspend != nil && **wl.suspend
			}
			// A StatefulSet whose policy deletes its claims at a scale-down (or at its
			// deletion) keeps them while it is stopped: the policy is recorded and set to
			// Retain in the same update as the scale-down, so the StatefulSet controller never
			// sees the one without the other.
			if wl.retention != nil && deletesClaims(*wl.retention) {
				before := **wl.retention
				rec.Retention = &before
				*wl.retention = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
					WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
					WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
				}
				m.log("keeping the StatefulSet's claims while it is stopped: its claim retention policy is Retain until it starts again",
					map[string]any{"name": o.Name, "whenScaled": string(before.WhenScaled), "whenDeleted": string(before.WhenDeleted)})
			}
		}
		if !slices.Contains(rec.Claims, m.Spec.Claim) {
			rec.Claims = append(rec.Claims, m.Spec.Claim)
		}
		if err := setStopRecord(wl.meta, rec); err != nil {
			return false, err
		}
		if wl.replicas != nil {
			zero := int32(0)
			*wl.replicas = &zero
		} else {
			yes := true
			*wl.suspend = &yes
		}
		return true, nil
	})
}

// start takes this claim off an owner's stop record; when no other migration keeps it stopped,
// it gives the owner back what it asked for before. It reports whether the owner runs again. An
// owner without a record was started already (by this migration before an interruption).
func (m *Migrator) start(ctx context.Context, o owner) (started bool, err error) {
	err = m.edit(ctx, o, func(wl workload) (bool, error) {
		rec, err := stopRecordOf(wl.meta)
		if err != nil || rec == nil {
			started = err == nil
			return false, err
		}
		rec.Claims = slices.DeleteFunc(rec.Claims, func(c string) bool { return c == m.Spec.Claim })
		if len(rec.Claims) > 0 {
			started = false
			return true, setStopRecord(wl.meta, rec)
		}
		started = true
		if wl.replicas != nil {
			n := rec.Replicas
			*wl.replicas = &n
		} else {
			s := rec.Suspended
			*wl.suspend = &s
		}
		if rec.Retention != nil && wl.retention != nil {
			before := *rec.Retention
			*wl.retention = &before
		}
		return true, setStopRecord(wl.meta, nil)
	})
	return started, err
}

// waitReady waits until a Deployment, StatefulSet or ReplicaSet has all the replicas it asks for
// Ready on its current template. Jobs and CronJobs are not waited for.
func (m *Migrator) waitReady(ctx context.Context, o owner) error {
	ns := m.Spec.Namespace
	what := fmt.Sprintf("%s %s/%s to have its replicas Ready", o.Kind, ns, o.Name)
	wait := kube.Wait{What: what, Timeout: time.Until(deadline(ctx))}
	var err error
	switch o.Kind {
	case volumes.KindDeployment:
		_, err = kube.WaitFor(ctx, m.Client.AppsV1().Deployments(ns), o.Name, nil, wait, func(d *appsv1.Deployment) (bool, string, error) {
			if d == nil {
				return true, "", nil // deleted meanwhile: nothing to wait for
			}
			n, s := replicas(d.Spec.Replicas), d.Status
			ok := s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == n && s.ReadyReplicas == n && s.Replicas == n
			return ok, fmt.Sprintf("%d of %d Ready", s.ReadyReplicas, n), nil
		})
	case volumes.KindStatefulSet:
		_, err = kube.WaitFor(ctx, m.Client.AppsV1().StatefulSets(ns), o.Name, nil, wait, func(s *appsv1.StatefulSet) (bool, string, error) {
			if s == nil {
				return true, "", nil
			}
			n := replicas(s.Spec.Replicas)
			ok := s.Status.ObservedGeneration >= s.Generation && s.Status.ReadyReplicas == n && s.Status.Replicas == n
			return ok, fmt.Sprintf("%d of %d Ready", s.Status.ReadyReplicas, n), nil
		})
	case volumes.KindReplicaSet:
		_, err = kube.WaitFor(ctx, m.Client.AppsV1().ReplicaSets(ns), o.Name, nil, wait, func(r *appsv1.ReplicaSet) (bool, string, error) {
			if r == nil {
				return true, "", nil
			}
			n := replicas(r.Spec.Replicas)
			ok := r.Status.ObservedGeneration >= r.Generation && r.Status.ReadyReplicas == n && r.Status.Replicas == n
			return ok, fmt.Sprintf("%d of %d Ready", r.Status.ReadyReplicas, n), nil
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

// notQuietError says that something else acted on the stopped workload or the source claim:
// the migration must not swap, since the copy may lack what was written since.
type notQuietError struct{ found []string }

func (e *notQuietError) Error() string {
	return "something else acted on the workload while the migration had it stopped: " + strings.Join(e.found, "; ") +
		". Whatever it wrote to the source volume since the copy was verified would not be on the new volume, so the claim was not swapped. " +
		"Pause that actor for the migration (Argo CD: disable self-heal; Flux: flux suspend; KEDA: autoscaling.keda.sh/paused; an operator: its pause setting; " +
		"a CronJob: no new runs), then apply again"
}

// checkQuiet checks, right before a step that cannot be undone, that the workload is still as
// the migration stopped it: no pod but the copy pods mounts the claim, and every owner this
// migration stopped still carries its stop record and asks for zero replicas (a Job or CronJob:
// suspended), a StatefulSet with a claim retention policy of Retain. It returns a
// *notQuietError naming what came back and, where the cluster records it, who did it.
func (m *Migrator) checkQuiet(ctx context.Context, owners []owner) error {
	var found []string
	pods, err := m.mountingPods(ctx)
	if err != nil {
		return err
	}
	for _, p := range pods {
		by := "no controller: a bare pod"
		if ref := metav1.GetControllerOf(&p); ref != nil {
			by = "made by " + ref.Kind + " " + ref.Name
		}
		found = append(found, fmt.Sprintf("pod %s mounts claim %s (%s)", p.Name, m.ref(), by))
	}
	back, err := m.ownersBack(ctx, owners)
	if err != nil {
		return err
	}
	found = append(found, back...)
	if len(found) == 0 {
		return nil
	}
	return &notQuietError{found: found}
}

// ownersBack says which owners this migration stopped are no longer as it left them.
func (m *Migrator) ownersBack(ctx context.Context, owners []owner) ([]string, error) {
	var found []string
	for _, o := range owners {
		err := m.edit(ctx, o, func(wl workload) (bool, error) {
			rec, err := stopRecordOf(wl.meta)
			if err != nil {
				return false, err
			}
			what := o.Kind + " " + o.Name
			if rec == nil || !slices.Contains(rec.Claims, m.Spec.Claim) {
				found = append(found, what+" lost the migration's stop record (annotation "+AnnotationStopped+"): something replaced its annotations")
			}
			switch {
			case wl.replicas != nil && replicas(*wl.replicas) != 0:
				found = append(found, fmt.Sprintf("%s asks for %d replicas again%s", what, replicas(*wl.replicas), setBy(wl.meta, "replicas")))
			case wl.suspend != nil && (*wl.suspend == nil || !**wl.suspend):
				found = append(found, what+" is no longer suspended"+setBy(wl.meta, "suspend"))
			}
			if wl.retention != nil && rec != nil && rec.Retention != nil && deletesClaims(*wl.retention) {
				found = append(found, what+"'s claim retention policy deletes claims again"+setBy(wl.meta, "persistentVolumeClaimRetentionPolicy"))
			}
			return false, nil
		})
		if err != nil {
			return nil, err
		}
	}
	return found, nil
}

// setBy is " (set by <manager>)" for the field manager that last wrote spec.<field>, or "".
func setBy(meta *metav1.ObjectMeta, field string) string {
	if mgr := replicasManager(meta, field); mgr != "" {
		return " (set by " + mgr + ")"
	}
	return ""
}
