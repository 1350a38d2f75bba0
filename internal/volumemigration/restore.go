package volumemigration

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

// provisionedBy is the annotation a provisioner sets on the volumes it makes.
const provisionedBy = "pv.kubernetes.io/provisioned-by"

// RestoreSpec is the Spec of restore_on_destroy: the claim of s moved back onto volume, the
// source volume its migration kept, by the same phases as the migration (copy while the
// workload runs, stop, delta and verification, swap, start). It refuses a volume that is gone,
// that no migration of this claim kept, or that another claim holds. done is set when the claim
// is on volume already with nothing left to do (an earlier destroy restored it): Run is not needed.
func RestoreSpec(ctx context.Context, client kubernetes.Interface, s Spec, volume string) (spec Spec, done bool, err error) {
	ref := s.Namespace + "/" + s.Claim
	pv, err := client.CoreV1().PersistentVolumes().Get(ctx, volume, metav1.GetOptions{})
	if kube.IsNotFound(err) {
		return s, false, fmt.Errorf("the source volume %s is gone: there is nothing to move claim %s back onto. "+
			"Set restore_on_destroy = false (apply) to destroy without moving data", volume, ref)
	}
	if err != nil {
		return s, false, fmt.Errorf("reading the source volume %s: %w", volume, err)
	}
	claim, err := client.CoreV1().PersistentVolumeClaims(s.Namespace).Get(ctx, s.Claim, metav1.GetOptions{})
	if err != nil && !kube.IsNotFound(err) {
		return s, false, fmt.Errorf("reading claim %s: %w", ref, err)
	}
	// The kept volume is where it is: a move back to another node goes there (crossnode.go
	// finds its node), whatever target_node said of the way out.
	s.StorageClass, s.Volume, s.Size, s.DeleteSource, s.TargetNode = pv.Spec.StorageClassName, volume, nil, false, ""
	if claim != nil && err == nil && claim.Spec.VolumeName == volume {
		p, perr := progressOf(claim.Annotations)
		if perr == nil && (p.Phase == phaseNone || p.Phase == phaseDone) {
			return s, p.Phase == phaseNone, nil // restored; a done record is finished by Run
		}
		return s, false, nil
	}
	marked := strings.HasPrefix(pv.Annotations[AnnotationMigratedTo], ref+" ")
	if !marked {
		return s, false, fmt.Errorf("volume %s is not the kept source of a migration of %s (its annotation %s is %q): not moving the claim onto it",
			volume, ref, AnnotationMigratedTo, pv.Annotations[AnnotationMigratedTo])
	}
	// Bound to this claim's temporary claim is an earlier restore's doing; to any other, not.
	if r := pv.Spec.ClaimRef; r != nil && pv.Status.Phase == corev1.VolumeBound && (r.Namespace != s.Namespace || !strings.Contains(r.Name, targetInfix)) {
		return s, false, fmt.Errorf("the source volume %s is bound to claim %s/%s: not moving claim %s onto it", volume, r.Namespace, r.Name, ref)
	}
	return s, false, nil
}

// finishRestore ends a restore: the volume the claim is back on is no longer a kept source; the
// volume it left is deleted when a provisioner made it for the migration (its reclaim policy
// from before decides what happens to its data, as delete_source does), and kept otherwise (a
// static volume someone else made: Released, Retain, marked); the record leaves the claim.
func (m *Migrator) finishRestore(ctx context.Context, p progress) error {
	if err := m.annotateVolume(ctx, p.TargetVolume, map[string]*string{AnnotationMigratedTo: nil}); err != nil && !kube.IsNotFound(err) {
		return err
	}
	left, err := m.Client.CoreV1().PersistentVolumes().Get(ctx, p.SourceVolume, metav1.GetOptions{})
	switch {
	case kube.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("reading volume %s: %w", p.SourceVolume, err)
	case left.Annotations[provisionedBy] != "":
		if err := DeleteSource(ctx, m.Client, p.SourceVolume, m.ref(), m.log); err != nil {
			return err
		}
	default:
		m.log("keeping the volume the claim left: no provisioner made it (a static volume), so it is left Released with its data", map[string]any{"volume": p.SourceVolume})
	}
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:null}}}`, AnnotationProgress)
	if _, err := m.claims().Patch(ctx, m.Spec.Claim, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !kube.IsNotFound(err) {
		return fmt.Errorf("removing the restore's record from claim %s: %w", m.ref(), err)
	}
	return nil
}
