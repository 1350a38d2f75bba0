package volumemigration

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestFinishRestore: once the claim is back on its source volume, the volume it left is deleted
// when a provisioner made it (its reclaim policy from before decides: Delete, handed back to its
// provisioner) and kept when it is a static volume; the source loses its mark, the claim the
// restore's record.
func TestFinishRestore(t *testing.T) {
	for _, tc := range []struct {
		name        string
		provisioned bool
		wantPolicy  corev1.PersistentVolumeReclaimPolicy
	}{
		{name: "provisioned", provisioned: true, wantPolicy: corev1.PersistentVolumeReclaimDelete},
		{name: "static", wantPolicy: corev1.PersistentVolumeReclaimRetain},
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
			m := &Migrator{Client: client, Spec: Spec{Namespace: "db", Claim: "data", Volume: "pvc-old"}}
			ctx := context.Background()
			if err := m.finishRestore(ctx, progress{Phase: phaseDone, SourceVolume: "pvc-new", TargetVolume: "pvc-old"}); err != nil {
				t.Fatal(err)
			}
			got, err := client.CoreV1().PersistentVolumes().Get(ctx, "pvc-new", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Spec.PersistentVolumeReclaimPolicy != tc.wantPolicy {
				t.Errorf("the volume the claim left has policy %s, want %s", got.Spec.PersistentVolumeReclaimPolicy, tc.wantPolicy)
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
