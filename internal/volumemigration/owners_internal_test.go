package volumemigration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/volumes"
)

// TestEditRetriesOnConflict: for each kind the migration scales, edit reads the workload, lets
// the change edit it and writes it back; when another actor wrote it in between (the update
// answers Conflict), the change is made again on a fresh read and written; a workload that is
// gone is no error; a change that writes nothing sends no update; a change's error is returned
// with the workload's name; a kind it cannot scale is refused.
func TestEditRetriesOnConflict(t *testing.T) {
	one := int32(1)
	objects := map[string]struct {
		obj      runtime.Object
		resource string
		group    string
	}{
		volumes.KindDeployment:  {&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "app"}, Spec: appsv1.DeploymentSpec{Replicas: &one}}, "deployments", "apps"},
		volumes.KindStatefulSet: {&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "app"}, Spec: appsv1.StatefulSetSpec{Replicas: &one}}, "statefulsets", "apps"},
		volumes.KindReplicaSet:  {&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "app"}, Spec: appsv1.ReplicaSetSpec{Replicas: &one}}, "replicasets", "apps"},
		volumes.KindJob:         {&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "app"}}, "jobs", "batch"},
		volumes.KindCronJob:     {&batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "app"}}, "cronjobs", "batch"},
	}
	for kind, o := range objects {
		t.Run(kind, func(t *testing.T) {
			client := fake.NewClientset(o.obj)
			conflicts, updates := 1, 0
			client.PrependReactor("update", o.resource, func(k8stesting.Action) (bool, runtime.Object, error) {
				updates++
				if conflicts > 0 {
					conflicts--
					return true, nil, apierrors.NewConflict(schema.GroupResource{Group: o.group, Resource: o.resource}, "w", errors.New("the object has been modified"))
				}
				return false, nil, nil
			})
			m := &Migrator{Client: client, Spec: Spec{Namespace: "app", Claim: "data"}}
			calls := 0
			err := m.edit(context.Background(), owner{Kind: kind, Name: "w"}, func(w workload) (bool, error) {
				calls++
				if w.meta.Annotations == nil {
					w.meta.Annotations = map[string]string{}
				}
				w.meta.Annotations["edited"] = fmt.Sprint(calls)
				switch {
				case w.replicas != nil:
					zero := int32(0)
					*w.replicas = &zero
				case w.suspend != nil:
					yes := true
					*w.suspend = &yes
				default:
					t.Errorf("%s: the workload view has neither replicas nor suspend", kind)
				}
				if (kind == volumes.KindStatefulSet) != (w.retention != nil) {
					t.Errorf("%s: retention in the view = %v, want it for StatefulSets only", kind, w.retention != nil)
				}
				return true, nil
			})
			if err != nil {
				t.Fatalf("edit: %v", err)
			}
			if calls != 2 || updates != 2 {
				t.Errorf("change called %d times, %d updates sent; want 2 and 2 (one conflict, then the write)", calls, updates)
			}
			meta, stopped := read(t, client, kind)
			if meta.Annotations["edited"] != "2" || !stopped {
				t.Errorf("after edit: annotation %q, stopped %v; want the second change's write", meta.Annotations["edited"], stopped)
			}

			// A change that writes nothing sends no update.
			updates = 0
			if err := m.edit(context.Background(), owner{Kind: kind, Name: "w"}, func(workload) (bool, error) { return false, nil }); err != nil || updates != 0 {
				t.Errorf("a change that writes nothing: err %v, %d updates", err, updates)
			}
			// A change's error names the workload.
			err = m.edit(context.Background(), owner{Kind: kind, Name: "w"}, func(workload) (bool, error) { return false, errors.New("no") })
			if err == nil || !strings.Contains(err.Error(), kind+"/w in app") {
				t.Errorf("a change's error: %v", err)
			}
			// A workload that is gone is no error.
			if err := m.edit(context.Background(), owner{Kind: kind, Name: "gone"}, func(workload) (bool, error) {
				t.Error("change called for a workload that is gone")
				return true, nil
			}); err != nil {
				t.Errorf("a workload that is gone: %v", err)
			}
		})
	}
	m := &Migrator{Client: fake.NewClientset(), Spec: Spec{Namespace: "app", Claim: "data"}}
	if err := m.edit(context.Background(), owner{Kind: "DaemonSet", Name: "w"}, func(workload) (bool, error) { return true, nil }); err == nil || !strings.Contains(err.Error(), "cannot be scaled") {
		t.Errorf("a DaemonSet: %v", err)
	}
}

// read returns the workload's metadata as stored and whether it is stopped (replicas 0 or
// suspended).
func read(t *testing.T, client *fake.Clientset, kind string) (metav1.ObjectMeta, bool) {
	t.Helper()
	ctx := context.Background()
	var err error
	switch kind {
	case volumes.KindDeployment:
		var o *appsv1.Deployment
		if o, err = client.AppsV1().Deployments("app").Get(ctx, "w", metav1.GetOptions{}); err == nil {
			return o.ObjectMeta, *o.Spec.Replicas == 0
		}
	case volumes.KindStatefulSet:
		var o *appsv1.StatefulSet
		if o, err = client.AppsV1().StatefulSets("app").Get(ctx, "w", metav1.GetOptions{}); err == nil {
			return o.ObjectMeta, *o.Spec.Replicas == 0
		}
	case volumes.KindReplicaSet:
		var o *appsv1.ReplicaSet
		if o, err = client.AppsV1().ReplicaSets("app").Get(ctx, "w", metav1.GetOptions{}); err == nil {
			return o.ObjectMeta, *o.Spec.Replicas == 0
		}
	case volumes.KindJob:
		var o *batchv1.Job
		if o, err = client.BatchV1().Jobs("app").Get(ctx, "w", metav1.GetOptions{}); err == nil {
			return o.ObjectMeta, o.Spec.Suspend != nil && *o.Spec.Suspend
		}
	case volumes.KindCronJob:
		var o *batchv1.CronJob
		if o, err = client.BatchV1().CronJobs("app").Get(ctx, "w", metav1.GetOptions{}); err == nil {
			return o.ObjectMeta, o.Spec.Suspend != nil && *o.Spec.Suspend
		}
	}
	t.Fatalf("reading %s w: %v", kind, err)
	return metav1.ObjectMeta{}, false
}
