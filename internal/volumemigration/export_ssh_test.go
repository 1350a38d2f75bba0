package volumemigration

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// RunKilledInSSHCopy runs a migration between nodes over SSH that stops as a killed provider
// would in the first copy, once its connection to the daemon is open: the forwarder is cut,
// the daemon and its directory are left on the target node.
func RunKilledInSSHCopy(ctx context.Context, m *Migrator) error {
	m.killInSSH = modeCopy
	_, err := m.Run(ctx)
	return err
}

// ForwardedBytes is how many bytes the copies over SSH of m carried through the provider.
func ForwardedBytes(m *Migrator) int64 { return m.forwardedBytes }

// SSHDir is the directory of the daemon of m's migration of claim on the target node.
func SSHDir(m *Migrator, claim *corev1.PersistentVolumeClaim) string {
	return m.sshDir(targetClaimName(claim))
}
