package volumemigration

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// RunKilledAfterScaleDown runs a migration that stops as a killed provider would, right after
// the owners were scaled down and that was recorded on the claim.
func RunKilledAfterScaleDown(ctx context.Context, m *Migrator) error {
	m.killAt = phaseStopped
	_, err := m.Run(ctx)
	return err
}

// RunKilledAfterClaimDeleted runs a migration that stops as a killed provider would, in the
// swap, right after the source claim was deleted and before it is made again on the new volume.
func RunKilledAfterClaimDeleted(ctx context.Context, m *Migrator) error {
	m.killAfterDelete = true
	_, err := m.Run(ctx)
	return err
}

// RunKilledAfterCopy runs a migration that stops as a killed provider would, once the copy made
// while the workload runs is done and recorded, before the workload is stopped.
func RunKilledAfterCopy(ctx context.Context, m *Migrator) error {
	m.killAfterCopy = true
	_, err := m.Run(ctx)
	return err
}

// RunKilledBeforeStart runs a migration that stops as a killed provider would, once the claim
// is made again and bound to the new volume, before the workload is started again.
func RunKilledBeforeStart(ctx context.Context, m *Migrator) error {
	m.killAt = phaseStarting
	_, err := m.Run(ctx)
	return err
}

// ErrKilled is what such a run returns.
var ErrKilled = errKilled

// RunKilledAtSwap runs a migration that stops as a killed provider would once the copy is
// verified and the swap is recorded, before anything of the swap is done.
func RunKilledAtSwap(ctx context.Context, m *Migrator) error {
	m.killAt = phaseSwapping
	_, err := m.Run(ctx)
	return err
}

// RunKilledInCrossCopy runs a migration between nodes that stops as a killed provider would in
// the first copy, once its rsync daemon and client pods run (both left, with the Secret).
func RunKilledInCrossCopy(ctx context.Context, m *Migrator) error {
	m.killInCrossCopy = true
	_, err := m.Run(ctx)
	return err
}

// RunKilledInCrossFinal runs a migration between nodes that stops as a killed provider would in
// the final copy (the delta and the verification, the workload stopped), once its rsync daemon
// and client pods run (both left, with the Secret).
func RunKilledInCrossFinal(ctx context.Context, m *Migrator) error {
	m.killInCrossFinal = true
	_, err := m.Run(ctx)
	return err
}

// DaemonPorts are the first tries ports the rsync daemon of the copy between nodes of mode
// ("copy" or "final") tries for claim, in order.
func DaemonPorts(claim *corev1.PersistentVolumeClaim, mode string, tries int) []int32 {
	name := daemonPodName(targetClaimName(claim), mode)
	out := make([]int32, 0, tries)
	for try := range tries {
		out = append(out, daemonPortAt(name, try))
	}
	return out
}
