package volumemigration

import "context"

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
