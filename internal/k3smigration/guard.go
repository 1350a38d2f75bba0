package k3smigration

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/node"
)

// armGuard arms the node guard before k3s is stopped, on nodes that run systemd: a transient
// systemd timer (systemd-run --on-active) that, unless disarmed within spec.GuardDelay, runs
// scripts/guard.sh, which stops k3s, undoes the switch, copies back what k3s wrote on the copy if
// it had been started there, and starts k3s on the original directory. It covers the provider
// being killed or losing the node for good while k3s is down. Without systemd there is no guard
// (a warning says so).
func (m *move) armGuard(ctx context.Context) error {
	if !m.systemd {
		tflog.Warn(ctx, "the node does not run systemd with systemd-run: no node guard covers the time k3s is stopped")
		return nil
	}
	guardDir := m.spec.GuardDir
	id := "clusterstorage-k3s-guard-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	state := guardDir + "/" + id + ".state"
	if err := m.host.MkdirAll(ctx, guardDir, node.DirOptions{Mode: 0o700}); err != nil {
		return fmt.Errorf("arming the node guard: %w", err)
	}
	original, k3sDir := m.configOnSource, "target"
	if !m.toTarget {
		original, k3sDir = m.configOnTarget, "source"
	}
	if m.spec.Method == MethodConfig {
		if original == nil {
			if err := m.host.WriteFile(ctx, state+".config.none", []byte("none\n"), 0o600); err != nil {
				return fmt.Errorf("arming the node guard: %w", err)
			}
		} else if err := m.host.WriteFile(ctx, state+".config", original, 0o600); err != nil {
			return fmt.Errorf("arming the node guard: %w", err)
		}
	}
	args := []string{m.service, string(m.spec.Method), m.spec.Source, m.spec.Target, m.away, m.live, m.destReal, MarkerName, state,
		m.spec.ConfigFile, m.spec.FstabFile, k3sDir}
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = node.Quote(a)
	}
	text := "set -- " + strings.Join(quoted, " ") + "\n" + scriptGuard.text()
	if err := m.host.WriteFile(ctx, guardDir+"/"+id+".sh", []byte(text), 0o700); err != nil {
		return fmt.Errorf("arming the node guard: %w", err)
	}
	if err := m.host.WriteFile(ctx, state, []byte("phase=stopped\n"), 0o600); err != nil {
		return fmt.Errorf("arming the node guard: %w", err)
	}
	secs := strconv.Itoa(int(m.spec.GuardDelay.Seconds()))
	if _, err := runOn(ctx, m.host, node.NewCommand("systemd-run", "--unit="+id, "--on-active="+secs+"s", "--timer-property=AccuracySec=1s",
		"--description=clusterstorage: put k3s back on its original data dir unless the migration disarms this in time",
		"/bin/sh", guardDir+"/"+id+".sh")); err != nil {
		return fmt.Errorf("arming the node guard (systemd-run): %w", err)
	}
	m.guard = id
	m.result.Guarded = true
	tflog.Info(ctx, "node guard armed", map[string]any{"unit": id + ".timer", "fires_after_seconds": secs})
	return nil
}

// guardPhase tells the armed guard how far the migration got ("switched", "started"), after
// checking that it has not fired: a guard that fired has put k3s back on the original, and the
// migration must then not switch anything.
func (m *move) guardPhase(ctx context.Context, phase string) error {
	if m.guard == "" {
		return nil
	}
	res, _ := runOn(ctx, m.host, node.NewCommand("systemctl", "is-active", m.guard+".timer")) //nolint:errcheck // is-active exits non-zero when not active; the output says so.
	if res == nil || strings.TrimSpace(string(res.Stdout)) != "active" {
		return fmt.Errorf("the node guard %s.timer is no longer armed (it fired: the migration took longer than %s since the stop, or it was stopped by hand): "+
			"nothing was switched; see `journalctl -u %s` on the node", m.guard, m.spec.GuardDelay, m.guard)
	}
	if err := m.host.WriteFile(ctx, m.spec.GuardDir+"/"+m.guard+".state", []byte("phase="+phase+"\n"), 0o600); err != nil {
		return fmt.Errorf("telling the node guard the migration is %s: %w", phase, err)
	}
	return nil
}

// disarmGuard stops the guard's timer and removes its files; the migration (or its rollback) is
// done. A failure is a warning: the guard, should it fire later, finds k3s on the original (it
// then only restarts it) or, after a success, would move k3s back, so the warning says how to
// stop it by hand.
func (m *move) disarmGuard(ctx context.Context) {
	if m.guard == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	id, guardDir := m.guard, m.spec.GuardDir
	if _, err := runOn(ctx, m.host, node.NewCommand("systemctl", "stop", id+".timer")); err != nil {
		m.result.Warnings = append(m.result.Warnings, fmt.Sprintf("The node guard could not be disarmed: %v. Run `systemctl stop %s.timer` on the node now, "+
			"or it puts k3s back on the original directory.", err, id))
		return
	}
	if _, err := runOn(ctx, m.host, node.NewCommand("rm", "-f", "--", guardDir+"/"+id+".sh", guardDir+"/"+id+".state",
		guardDir+"/"+id+".state.config", guardDir+"/"+id+".state.config.none")); err != nil {
		tflog.Warn(ctx, "could not remove the node guard's files", map[string]any{"error": err.Error()})
	}
	m.guard = ""
	tflog.Info(ctx, "node guard disarmed", map[string]any{"unit": id + ".timer"})
}
