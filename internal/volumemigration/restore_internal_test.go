package volumemigration

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

// TestFinishRestore: once the claim is back on its source volume, the volume it left is deleted
// when a provisioner made it (its reclaim policy from before decides: Delete, handed back to its
// provisioner) and kept when it is a static volume; the source loses its mark, the claim the
// restore's record.
func TestFinishRestore(t *testing.T) {
	for _, tc := range []struct {
		name        string
		provisioned bool
	}{
		{name: "provisioned", provisioned: true},
		{name: "static"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			left := &corev1.PersistentVolume{
				ObjectMeta: metav1.ObjectMeta{Name: "pvc-new", Annotations: map[string]string{
					AnnotationMigratedTo: "db/data pvc-old", AnnotationReclaimPolicy: "Delete",
				}},
				Spec: corev1.PersistentVolumeSpec{PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain},
			}
			if tc.provisioned {
				left.Annotations[provisionedBy] = "openebs.io/local"
			}
			source := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pvc-old", Annotations: map[string]string{AnnotationMigratedTo: "db/data pvc-new"}}}
			claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "db", Annotations: map[string]string{
				AnnotationProgress: `{"phase":"done"}`, "team": "storage",
			}}}
			client := fake.NewClientset(left, source, claim)
			handedBack := provisioner(t, client, "")
			m := &Migrator{Client: client, Spec: Spec{Namespace: "db", Claim: "data", Volume: "pvc-old"}}
			ctx := context.Background()
			if err := m.finishRestore(ctx, progress{Phase: phaseDone, SourceVolume: "pvc-new", TargetVolume: "pvc-old"}); err != nil {
				t.Fatal(err)
			}
			_, err := client.CoreV1().PersistentVolumes().Get(ctx, "pvc-new", metav1.GetOptions{})
			if tc.provisioned != kube.IsNotFound(err) || tc.provisioned != handedBack() {
				t.Errorf("the volume the claim left: handed to its provisioner %t, read back %v; want it handed back and deleted: %t", handedBack(), err, tc.provisioned)
			}
			back, err := client.CoreV1().PersistentVolumes().Get(ctx, "pvc-old", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if v, ok := back.Annotations[AnnotationMigratedTo]; ok {
				t.Errorf("the source volume is still marked: %s", v)
			}
			c, err := client.CoreV1().PersistentVolumeClaims("db").Get(ctx, "data", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := c.Annotations[AnnotationProgress]; ok || c.Annotations["team"] != "storage" {
				t.Errorf("claim annotations after the restore: %v", c.Annotations)
			}
		})
	}
}

// provisioner plays a volume's provisioner on the fake client: a volume whose reclaim policy is
// patched to Delete is deleted, or, with failure set, left in phase Failed with that message, as
// the PV controller leaves a volume its provisioner cannot delete. It reports whether it saw one.
func provisioner(t *testing.T, client *fake.Clientset, failure string) (saw func() bool) {
	t.Helper()
	seen := make(chan struct{}, 1)
	client.PrependReactor("patch", "persistentvolumes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		patch, ok := a.(k8stesting.PatchAction)
		if !ok {
			return false, nil, nil
		}
		if !strings.Contains(string(patch.GetPatch()), `"persistentVolumeReclaimPolicy":"Delete"`) {
			return false, nil, nil
		}
		select {
		case seen <- struct{}{}:
		default:
		}
		// The controller acts after the patch is stored.
		go func() {
			time.Sleep(20 * time.Millisecond)
			ctx := context.Background()
			if failure == "" {
				_ = client.Tracker().Delete(pvResource, "", patch.GetName()) //nolint:errcheck // the test reads the outcome
				return
			}
			pv, err := client.CoreV1().PersistentVolumes().Get(ctx, patch.GetName(), metav1.GetOptions{})
			if err != nil {
				return
			}
			pv.Status.Phase, pv.Status.Message = corev1.VolumeFailed, failure
			_, _ = client.CoreV1().PersistentVolumes().UpdateStatus(ctx, pv, metav1.UpdateOptions{}) //nolint:errcheck // as above
		}()
		return false, nil, nil
	})
	return func() bool { return len(seen) == 1 }
}

var pvResource = corev1.SchemeGroupVersion.WithResource("persistentvolumes")

// TestDeleteSource: a kept source volume whose policy was Delete is handed back to its
// provisioner and waited for until it is gone (a backend's destroy guard later in the same apply
// must not find it), or until the provisioner gives up (Failed: an error naming why); one whose
// policy was Retain has only its object deleted, at once.
func TestDeleteSource(t *testing.T) {
	for _, tc := range []struct {
		name, policy, failure, wantErr string
	}{
		{name: "delete", policy: "Delete"},
		{name: "delete fails", policy: "Delete", failure: "error deleting volume: backend unreachable", wantErr: "could not be deleted by its provisioner (phase Failed: error deleting volume: backend unreachable)"},
		{name: "retain", policy: "Retain"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pv := &corev1.PersistentVolume{
				ObjectMeta: metav1.ObjectMeta{Name: "pvc-old", Annotations: map[string]string{
					AnnotationMigratedTo: "db/data pvc-new", AnnotationReclaimPolicy: tc.policy, provisionedBy: "driver.longhorn.io",
				}},
				Spec:   corev1.PersistentVolumeSpec{PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain},
				Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeReleased},
			}
			client := fake.NewClientset(pv)
			handedBack := provisioner(t, client, tc.failure)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := DeleteSource(ctx, client, "pvc-old", "db/data", func(string, map[string]any) {})
			switch {
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("got %v, want an error saying %q", err, tc.wantErr)
			case tc.wantErr == "" && err != nil:
				t.Fatal(err)
			}
			if handedBack() != (tc.policy == "Delete") {
				t.Errorf("handed back to its provisioner: %t, want %t", handedBack(), tc.policy == "Delete")
			}
			_, err = client.CoreV1().PersistentVolumes().Get(ctx, "pvc-old", metav1.GetOptions{})
			if gone := kube.IsNotFound(err); gone != (tc.wantErr == "") {
				t.Errorf("after DeleteSource the volume is gone: %t (%v)", gone, err)
			}
		})
	}
}

// TestTargetLeft: a rollback's message names the new volume it leaves Released with a partial
// copy when the volume's reclaim policy keeps it, and says nothing of one its provisioner deletes,
// one already gone, or a restore's target (the kept source of the migration before).
func TestTargetLeft(t *testing.T) {
	pv := func(name string, policy corev1.PersistentVolumeReclaimPolicy) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{PersistentVolumeReclaimPolicy: policy}}
	}
	for _, tc := range []struct {
		name, target, restoreOf string
		want                    string
	}{
		{name: "static volume kept", target: "pv-retain", want: "The new volume pv-retain stays (reclaim policy Retain), Released"},
		{name: "provisioned volume deleted", target: "pv-delete"},
		{name: "volume gone", target: "pv-gone"},
		{name: "no volume bound yet"},
		{name: "restore", target: "pv-retain", restoreOf: "pv-retain"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(pv("pv-retain", corev1.PersistentVolumeReclaimRetain), pv("pv-delete", corev1.PersistentVolumeReclaimDelete))
			m := &Migrator{Client: client, Spec: Spec{Namespace: "app", Claim: "data", StorageClass: "fast", Volume: tc.restoreOf}}
			got := m.targetLeft(context.Background(), progress{TargetVolume: tc.target})
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Fatalf("targetLeft = %q, want %q", got, tc.want)
			}
			if tc.want != "" && !strings.Contains(got, "class fast") {
				t.Errorf("targetLeft = %q: the class that needs a free volume is not named", got)
			}
		})
	}
}
