package volumemigration_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/volumemigration"
)

// TestRestoreSpec: the move back is refused onto a volume that is gone, that no migration of the
// claim kept, or that another claim holds; it is done already when the claim is on the volume
// with no record left; otherwise its Spec targets the volume and its class, never deletes a
// source and never resizes.
func TestRestoreSpec(t *testing.T) {
	pv := func(name, migratedTo string, ref *corev1.ObjectReference, phase corev1.PersistentVolumePhase) *corev1.PersistentVolume {
		v := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{}},
			Spec:       corev1.PersistentVolumeSpec{StorageClassName: "longhorn", ClaimRef: ref},
			Status:     corev1.PersistentVolumeStatus{Phase: phase},
		}
		if migratedTo != "" {
			v.Annotations[volumemigration.AnnotationMigratedTo] = migratedTo
		}
		return v
	}
	claim := func(volume string, annotations map[string]string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "db", Annotations: annotations},
			Spec:       corev1.PersistentVolumeClaimSpec{VolumeName: volume},
		}
	}
	kept := "db/data pvc-new"
	other := &corev1.ObjectReference{Namespace: "db", Name: "other"}
	temporary := &corev1.ObjectReference{Namespace: "db", Name: "data-migrating-0123abcd"}
	for _, tc := range []struct {
		name    string
		objects []runtime.Object
		done    bool
		err     string
	}{
		{name: "gone", objects: []runtime.Object{claim("pvc-new", nil)}, err: "the source volume pvc-old is gone"},
		{name: "not kept", objects: []runtime.Object{claim("pvc-new", nil), pv("pvc-old", "", nil, corev1.VolumeReleased)},
			err: "is not the kept source of a migration of db/data"},
		{name: "kept for another claim", objects: []runtime.Object{claim("pvc-new", nil), pv("pvc-old", "db/database pvc-x", nil, corev1.VolumeReleased)},
			err: "is not the kept source of a migration of db/data"},
		{name: "bound to another claim", objects: []runtime.Object{claim("pvc-new", nil), pv("pvc-old", kept, other, corev1.VolumeBound)},
			err: "is bound to claim db/other"},
		{name: "kept", objects: []runtime.Object{claim("pvc-new", nil), pv("pvc-old", kept, nil, corev1.VolumeReleased)}},
		{name: "bound to the temporary claim of a restore", objects: []runtime.Object{claim("pvc-new", nil), pv("pvc-old", kept, temporary, corev1.VolumeBound)}},
		{name: "the claim is gone in the swap", objects: []runtime.Object{pv("pvc-old", kept, &corev1.ObjectReference{Namespace: "db", Name: "data"}, corev1.VolumeAvailable)}},
		{name: "restored", objects: []runtime.Object{claim("pvc-old", nil), pv("pvc-old", "", &corev1.ObjectReference{Namespace: "db", Name: "data"}, corev1.VolumeBound)}, done: true},
		{name: "restored, record left", objects: []runtime.Object{
			claim("pvc-old", map[string]string{volumemigration.AnnotationProgress: `{"phase":"done","claim":"db/data","storageClass":"longhorn"}`}),
			pv("pvc-old", kept, &corev1.ObjectReference{Namespace: "db", Name: "data"}, corev1.VolumeBound)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(tc.objects...)
			in := volumemigration.Spec{Namespace: "db", Claim: "data", StorageClass: "openebs-hostpath", DeleteSource: true, Image: "rsync:3"}
			s, done, err := volumemigration.RestoreSpec(context.Background(), client, in, "pvc-old")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, want an error with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if done != tc.done {
				t.Errorf("done = %t, want %t", done, tc.done)
			}
			if s.Volume != "pvc-old" || s.StorageClass != "longhorn" || s.DeleteSource || s.Size != nil || s.Image != "rsync:3" {
				t.Errorf("spec %+v: want volume pvc-old, class longhorn, no delete_source, no size, the image kept", s)
			}
		})
	}
}
