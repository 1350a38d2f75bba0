package node

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
