package node

import (
	"time"
)

// StatCommands returns how many commands h's connection ran for Stats.
func StatCommands(h *Host) int { return batchCommands(h, batchStat) }

// MkdirCommands returns how many commands h's connection ran for MkdirAlls.
func MkdirCommands(h *Host) int { return batchCommands(h, batchMkdir) }

// RealPathCommands returns how many commands h's connection ran for RealPaths.
func RealPathCommands(h *Host) int { return batchCommands(h, batchRealPath) }

// RemoveDirCommands returns how many commands h's connection ran for RemoveDirs.
func RemoveDirCommands(h *Host) int { return batchCommands(h, batchRemoveDir) }

func batchCommands(h *Host, kind batchKind) int {
	b := h.batch(kind)
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.commands
}

// ShellsStarted returns how many worker shells h's connection started (for h's sudo setting).
func ShellsStarted(h *Host) int {
	w := h.workerShell()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.started
}

// ShellOpen reports whether h's worker shell is open.
func ShellOpen(h *Host) bool {
	w := h.workerShell()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.open != nil
}

// SessionsOpened returns how many SSH sessions h's connection opened.
func SessionsOpened(h *Host) int64 { return h.conn.opened.Load() }

// SessionsInUse returns how many of h's connection's session slots are taken.
func SessionsInUse(h *Host) int { return len(h.conn.sessions) }

// SetShellIdle sets how long worker shells stay open without commands, until the test ends.
func SetShellIdle(t interface{ Cleanup(func()) }, d time.Duration) {
	old := shellIdle
	shellIdle = d
	t.Cleanup(func() { shellIdle = old })
}
