package localpv

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// releaseProtection takes the pv-protection finalizer off only a volume that is being deleted,
// holds no claim and has no other finalizer; every other volume keeps its finalizers.
func TestReleaseProtection(t *testing.T) {
	now := metav1.Now()
	deleting := func(mutate func(*corev1.PersistentVolume)) *corev1.PersistentVolume {
		pv := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: "pv", DeletionTimestamp: &now, Finalizers: []string{pvProtectionFinalizer}},
			Status:     corev1.PersistentVolumeStatus{Phase: corev1.VolumeAvailable},
		}
		if mutate != nil {
			mutate(pv)
		}
		return pv
	}
	claim := &corev1.ObjectReference{Namespace: "app", Name: "data"}
	for _, tc := range []struct {
		name    string
		pv      *corev1.PersistentVolume
		release bool
	}{
		{"available, being deleted", deleting(nil), true},
		{"pending, being deleted", deleting(func(pv *corev1.PersistentVolume) { pv.Status.Phase = corev1.VolumePending }), true},
		{"not being deleted", deleting(func(pv *corev1.PersistentVolume) { pv.DeletionTimestamp = nil }), false},
		{"bound", deleting(func(pv *corev1.PersistentVolume) { pv.Status.Phase, pv.Spec.ClaimRef = corev1.VolumeBound, claim }), false},
		{"bound phase without a reference", deleting(func(pv *corev1.PersistentVolume) { pv.Status.Phase = corev1.VolumeBound }), false},
		{"released, claim reference kept", deleting(func(pv *corev1.PersistentVolume) { pv.Status.Phase, pv.Spec.ClaimRef = corev1.VolumeReleased, claim }), false},
		{"another finalizer too", deleting(func(pv *corev1.PersistentVolume) { pv.Finalizers = append(pv.Finalizers, "example.com/keep") }), false},
		{"only another finalizer", deleting(func(pv *corev1.PersistentVolume) { pv.Finalizers = []string{"example.com/keep"} }), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(tc.pv.DeepCopy())
			if err := releaseProtection(t.Context(), client, tc.pv); err != nil {
				t.Fatal(err)
			}
			got, err := client.CoreV1().PersistentVolumes().Get(t.Context(), "pv", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			released := len(got.Finalizers) < len(tc.pv.Finalizers)
			if released != tc.release {
				t.Errorf("finalizers %v -> %v; want released = %v", tc.pv.Finalizers, got.Finalizers, tc.release)
			}
		})
	}
}
