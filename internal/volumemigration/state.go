package volumemigration

import (
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/volumes"
)

// Annotations the migration records its progress in. AnnotationProgress is on the claim being
// migrated and, from the swap on (when the claim is deleted and made again), on the new volume
// too, so a run that was interrupted anywhere is resumed by the next apply from what is real.
const (
	// AnnotationProgress holds the migration's progress as JSON (progress).
	AnnotationProgress = volumes.MigrationAnnotation
	// AnnotationClaim, on the new volume during the swap, holds the claim to make again (JSON).
	AnnotationClaim = "clusterstorage.io/migration-claim"
	// AnnotationReclaimPolicy, on both volumes during the swap, is their reclaim policy before
	// the migration set it to Retain.
	AnnotationReclaimPolicy = "clusterstorage.io/migration-reclaim-policy"
	// AnnotationMigratedTo, on the source volume once the claim moved, is the claim
	// (<namespace>/<name>) and the volume it moved to.
	AnnotationMigratedTo = volumes.MigratedToAnnotation
	// AnnotationHeartbeat is on the copy pods, renewed while the provider that made them waits
	// for them, as clusterstorage.io/benchmark-heartbeat on the benchmark's pods: a copy pod whose
	// heartbeat stopped was left by a provider that was killed, and is removed at once.
	AnnotationHeartbeat = "clusterstorage.io/migration-heartbeat"
)

// phase is how far a migration got. The order is the order of the steps.
type phase string

const (
	// phaseNone: nothing done, or everything undone by a rollback.
	phaseNone phase = ""
	// phaseCopying: the new claim exists (or is about to), the workload still runs.
	phaseCopying phase = "copying"
	// phaseStopped: the owners are scaled to zero (their counts in Owners).
	phaseStopped phase = "stopped"
	// phaseSwapping: the copy is verified; both volumes are being set to Retain and the claim
	// is being deleted and made again on the new volume.
	phaseSwapping phase = "swapping"
	// phaseStarting: the claim is bound to the new volume; the owners are being scaled back.
	phaseStarting phase = "starting"
	// phaseDone: migrated.
	phaseDone phase = "done"
)

var phaseOrder = map[phase]int{phaseNone: 0, phaseCopying: 1, phaseStopped: 2, phaseSwapping: 3, phaseStarting: 4, phaseDone: 5}

// next reports whether a migration may go from p to q: forward one step, or back to phaseNone
// (a rollback) from a phase before the swap. Setting the same phase again is allowed (a step
// repeated after an interruption).
func (p phase) next(q phase) bool {
	if p == q {
		return true
	}
	if q == phaseNone {
		return p.beforeSwap()
	}
	return phaseOrder[q] == phaseOrder[p]+1
}

// beforeSwap reports whether the source claim is still untouched, so a rollback only needs to
// remove the new claim and scale the owners back.
func (p phase) beforeSwap() bool { return phaseOrder[p] < phaseOrder[phaseSwapping] }

// owner is a workload the migration stopped, with what it asked for before.
type owner struct {
	Kind     string `json:"kind"`
	Name     string `json:"name"`
	Replicas int32  `json:"replicas"`
	// Suspended is a Job's or CronJob's spec.suspend before the migration.
	Suspended bool `json:"suspended,omitempty"`
}

// progress is what AnnotationProgress holds.
type progress struct {
	Phase phase `json:"phase"`
	// Claim is <namespace>/<name> of the claim migrated (for the record on the new volume).
	Claim string `json:"claim"`
	// ClaimUID is the UID of the claim when the migration began: the migration's identity. A
	// record whose claim has another UID (a claim made again by something else, a restore from a
	// backup that kept the annotations) belongs to another migration and is ignored. Records
	// written before it was recorded have none.
	ClaimUID     types.UID `json:"claimUID,omitempty"`
	StorageClass string    `json:"storageClass"`
	// SourceClass is the class the claim was on before (clusterstorage_volumes reads it).
	SourceClass string `json:"sourceClass,omitempty"`
	// TargetClaim is the temporary claim on the new class, until the swap.
	TargetClaim  string `json:"targetClaim,omitempty"`
	SourceVolume string `json:"sourceVolume,omitempty"`
	TargetVolume string `json:"targetVolume,omitempty"`
	// Owners are recorded before they are scaled down; nil until then.
	Owners []owner `json:"owners,omitempty"`
	Files  int64   `json:"files,omitempty"`
	// XattrFiles is how many files had extended attributes or ACLs the copy left out.
	XattrFiles int64 `json:"xattrFiles,omitempty"`
	Bytes      int64 `json:"bytes,omitempty"`
	// StoppedAt is when the owners were scaled down; Downtime is the seconds from then until
	// they were Ready again.
	StoppedAt  *time.Time `json:"stoppedAt,omitempty"`
	Downtime   float64    `json:"downtimeSeconds,omitempty"`
	MigratedAt *time.Time `json:"migratedAt,omitempty"`
}

// progressOf reads the progress recorded in annotations; no annotation is phaseNone.
func progressOf(annotations map[string]string) (progress, error) {
	v, ok := annotations[AnnotationProgress]
	if !ok {
		return progress{}, nil
	}
	var p progress
	if err := json.Unmarshal([]byte(v), &p); err != nil {
		return progress{}, fmt.Errorf("annotation %s is not what this provider writes (%v): %q", AnnotationProgress, err, v)
	}
	if _, known := phaseOrder[p.Phase]; !known {
		return progress{}, fmt.Errorf("annotation %s names an unknown phase %q (written by a newer provider?)", AnnotationProgress, p.Phase)
	}
	return p, nil
}

// value is the AnnotationProgress value of p.
func (p progress) value() string {
	b, err := json.Marshal(p)
	if err != nil {
		panic(err) // plain strings, numbers and times: cannot fail
	}
	return string(b)
}

// to returns p in phase q, or an error when the state machine forbids the step.
func (p progress) to(q phase) (progress, error) {
	if !p.Phase.next(q) {
		return p, fmt.Errorf("internal error: a migration in phase %q cannot go to %q", p.Phase, q)
	}
	p.Phase = q
	return p, nil
}

// further returns the one of a and b that got further (a on a tie), for a claim's and its new
// volume's records of the same migration.
func further(a, b progress) progress {
	if phaseOrder[b.Phase] > phaseOrder[a.Phase] {
		return b
	}
	return a
}

// belongsTo reports whether a record on claim c is this claim's: it names c's UID, or c was made
// again on the record's new volume by the swap, or it was written before records named a UID.
func (p progress) belongsTo(c *corev1.PersistentVolumeClaim) bool {
	return p.Phase == phaseNone || p.ClaimUID == "" || p.ClaimUID == c.UID ||
		(p.TargetVolume != "" && c.Spec.VolumeName == p.TargetVolume)
}

// volumeRecordBelongs reports whether a record found on a volume (from the swap on) is the one
// of the migration of claim (nil when the claim does not exist), whose own record is onClaim: the
// claim was made again on that volume; or it is gone in the middle of the swap; or it is the
// source claim itself, whose record says the swap was reached (stopped or swapping). A record
// that a rollback or another migration of a claim of that name left is none of these.
func volumeRecordBelongs(p progress, claim *corev1.PersistentVolumeClaim, onClaim progress) bool {
	switch {
	case p.ClaimUID == "":
		return true // written by an earlier build: as before
	case claim == nil:
		return p.Phase == phaseSwapping || p.Phase == phaseStarting
	case claim.Spec.VolumeName == p.TargetVolume:
		return true
	case claim.UID == p.ClaimUID:
		return onClaim.ClaimUID == p.ClaimUID && (onClaim.Phase == phaseStopped || onClaim.Phase == phaseSwapping)
	}
	return false
}
