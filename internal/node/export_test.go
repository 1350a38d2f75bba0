package node

// StatCommands returns how many commands h's connection ran for Stats.
func StatCommands(h *Host) int {
	b := h.statBatch()
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.commands
}
