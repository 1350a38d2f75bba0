package k3smigration

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"
	"unicode"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/node"
)

// Method is how k3s is pointed at the new directory.
type Method string

// The switch methods.
const (
	// MethodSymlink renames the source and leaves a symbolic link to the target in its place:
	// every absolute path k3s wrote (kubeconfigs, TLS paths, local-path volumes) keeps resolving.
	MethodSymlink Method = "symlink"
	// MethodConfig sets data-dir in the k3s configuration file.
	MethodConfig Method = "config"
	// MethodBindMount bind-mounts the target on the (emptied) source path, and adds the mount to
	// fstab.
	MethodBindMount Method = "bind_mount"
)

// Defaults.
const (
	DefaultSource     = "/var/lib/rancher/k3s"
	DefaultConfigFile = "/etc/rancher/k3s/config.yaml"
	DefaultFstab      = "/etc/fstab"
)

// Step names one step of a migration, as errors and logs show it.
type Step string

// The steps, in order.
const (
	StepPreflight Step = "preflight"
	StepDrain     Step = "drain"
	StepCopy      Step = "first copy"
	StepStop      Step = "stop"
	StepFinalCopy Step = "final copy"
	StepVerify    Step = "verify"
	StepSwitch    Step = "switch"
	StepStart     Step = "start"
	StepHealthy   Step = "healthy"
	StepCleanup   Step = "cleanup"
)

// Spec is one migration in plain Go.
type Spec struct {
	// Source is the k3s data directory (absolute).
	Source string
	// Target is the directory it moves to (absolute, absent or empty).
	Target string
	// Service is "k3s" or "k3s-agent"; "" detects it.
	Service string
	// Method is how k3s is switched to Target.
	Method Method
	// ConfigFile is the k3s configuration file (MethodConfig); its drop-ins are ConfigFile + ".d/*.yaml".
	ConfigFile string
	// FstabFile is where MethodBindMount makes its mount permanent.
	FstabFile string
	// KeepBackup keeps the renamed original directory after success.
	KeepBackup bool
	// CarryMounts moves filesystems mounted below Source along as mounts (bind-mounted below
	// Target); without it a Source with mounts below it is refused.
	CarryMounts bool
	// MarginBytes is the free space the target must have beyond the size of the data.
	MarginBytes int64
	// MeasureWrite measures sequential writes with fio on both filesystems before the copy.
	MeasureWrite bool
	// StopTimeout bounds stopping k3s; HealthTimeout bounds waiting for it to be healthy after a
	// start; RollbackTimeout bounds a rollback (which ignores cancellation).
	StopTimeout, HealthTimeout, RollbackTimeout time.Duration
	// GuardDelay is how long after the stop the node guard (systemd nodes) puts k3s back on the
	// original directory unless the migration disarmed it; 0 means StopTimeout + HealthTimeout +
	// RollbackTimeout + 30 minutes for the copy.
	GuardDelay time.Duration
	// GuardDir is where the node guard keeps its script and state (default: /run/clusterstorage,
	// a tmpfs: a reboot, which starts k3s from its unit anyway, forgets them).
	GuardDir string
}

func (s Spec) withDefaults() Spec {
	if s.Method == "" {
		s.Method = MethodSymlink
	}
	if s.ConfigFile == "" {
		s.ConfigFile = DefaultConfigFile
	}
	if s.FstabFile == "" {
		s.FstabFile = DefaultFstab
	}
	if s.StopTimeout == 0 {
		s.StopTimeout = 3 * time.Minute
	}
	if s.HealthTimeout == 0 {
		s.HealthTimeout = 5 * time.Minute
	}
	if s.RollbackTimeout == 0 {
		s.RollbackTimeout = 10 * time.Minute
	}
	if s.GuardDir == "" {
		s.GuardDir = "/run/clusterstorage"
	}
	if s.GuardDelay == 0 {
		s.GuardDelay = s.StopTimeout + s.HealthTimeout + s.RollbackTimeout + 30*time.Minute
	}
	return s
}

// CheckPath validates one path without reaching the node: absolute, clean, no control
// characters, not a system directory. name says which attribute it is, for the error.
func CheckPath(name, p string) error {
	if i := strings.IndexFunc(p, unicode.IsControl); i >= 0 {
		return fmt.Errorf("%s %q holds a control character (%U at byte %d): paths with newlines, tabs or escapes are refused", name, p, []rune(p[i:])[0], i)
	}
	if !strings.HasPrefix(p, "/") {
		return fmt.Errorf("%s %q must be an absolute path", name, p)
	}
	if path.Clean(p) != p {
		return fmt.Errorf("%s %q must be a clean path (write %q)", name, p, path.Clean(p))
	}
	switch p {
	case "/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/proc", "/root", "/run", "/sbin", "/sys", "/tmp", "/usr", "/var", "/var/lib":
		return fmt.Errorf("%s %q is a system directory", name, p)
	}
	return nil
}

// CheckPaths validates source and target without reaching the node: each as CheckPath says,
// different, neither inside the other.
func CheckPaths(source, target string) error {
	if err := CheckPath("source", source); err != nil {
		return err
	}
	if err := CheckPath("target", target); err != nil {
		return err
	}
	switch {
	case source == target:
		return fmt.Errorf("source and target are the same path %q", source)
	case strings.HasPrefix(target, source+"/"):
		return fmt.Errorf("target %q is inside source %q", target, source)
	case strings.HasPrefix(source, target+"/"):
		return fmt.Errorf("source %q is inside target %q", source, target)
	}
	return nil
}

// Filesystem describes the filesystem a directory is on.
type Filesystem struct {
	Device, Type, MountPoint string
	SizeBytes, AvailBytes    int64
}

// String describes the filesystem in one line.
func (f Filesystem) String() string {
	if f.Device == "" {
		return ""
	}
	return fmt.Sprintf("%s (%s) on %s, %s free of %s", f.Device, f.Type, f.MountPoint, human(f.AvailBytes), human(f.SizeBytes))
}

// Hooks are what a migration needs from outside the node, and the places tests inject faults.
type Hooks struct {
	// NodeReady reports whether the Kubernetes node is Ready and its kubelet has reported since
	// the given time. Nil skips the check.
	NodeReady func(ctx context.Context, since time.Time) (ready bool, reason string, err error)
	// Drain cordons the node and evicts its pods; Undrain uncordons it. Nil skips them.
	Drain, Undrain func(ctx context.Context) error
	// Claim runs at the end of the preflight: it checks that the cluster can lose this node for a
	// while (an HA server: the other etcd members healthy, no other server mid-migration) and marks
	// the node as mid-migration; the release it returns takes the mark away when the migration
	// is over, whatever its outcome. Nil skips it.
	Claim func(ctx context.Context) (release func(context.Context) error, err error)
	// BeforeStop runs just before k3s is stopped (to note the node's last heartbeat, so that
	// NodeReady can ask for a newer one). Nil skips it.
	BeforeStop func(ctx context.Context) error
	// Before, when set, runs before each step; an error fails that step. For tests.
	Before func(ctx context.Context, step Step) error
}

// Result is what a finished migration observed.
type Result struct {
	// Service is the unit that was stopped and started.
	Service string
	// BackupPath is where the original directory was renamed to ("" once removed).
	BackupPath string
	// BytesCopied is the file data both copies transferred; FilesCopied the regular files the
	// verified copy holds; Entries every entry it holds.
	BytesCopied, FilesCopied, Entries int64
	// Downtime is how long k3s was stopped.
	Downtime time.Duration
	// SourceFS and TargetFS are the filesystems the data moved between.
	SourceFS, TargetFS Filesystem
	// SourceWriteBps and TargetWriteBps are their sequential-write speeds in bytes per second
	// (Spec.MeasureWrite; 0 otherwise).
	SourceWriteBps, TargetWriteBps float64
	// CarriedMounts are the filesystems below the source that were carried along as mounts.
	CarriedMounts []string
	// Guarded is true when a node guard (a systemd timer) covered the time k3s was down.
	Guarded bool
	// Finished is when the migration was done.
	Finished time.Time
	// Warnings are problems that did not fail the migration (a backup that could not be removed).
	Warnings []string
	// Steps is how long each step took, in order.
	Steps []StepTime
}

// StepTime is how long one step took.
type StepTime struct {
	Step     Step
	Duration time.Duration
}

// StepError is a failed migration: which step failed, whether k3s had been stopped and started
// on the copy, and how the rollback went.
type StepError struct {
	Step Step
	Err  error
	// Stopped is true when k3s had been stopped before the failure (a rollback was needed).
	Stopped bool
	// Started is true when k3s had been started on the copy: from then on the copy may hold data
	// the original does not.
	Started bool
	// CopiedBack is true when the rollback found changes k3s made in the copy and copied them
	// back over the original (verified).
	CopiedBack bool
	// RollbackErr is the rollback's failure; nil when it succeeded or was not needed.
	RollbackErr error
	// Live is the directory k3s used before; Dest the directory the copy went to.
	Live, Dest string
}

// Error names the step, the cause and the state the node was left in, and which directory holds
// the newest data.
func (e *StepError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "step %q failed: %v\n\n", e.Step, e.Err)
	switch {
	case !e.Stopped:
		fmt.Fprintf(&b, "k3s was not stopped and %s was only read: nothing was lost. ", e.Live)
	case e.RollbackErr == nil && !e.Started:
		fmt.Fprintf(&b, "Rolled back: k3s runs again on the original directory %s, which was only read: nothing was lost. ", e.Live)
	case e.RollbackErr == nil && e.CopiedBack:
		fmt.Fprintf(&b, "Rolled back: k3s had run on %s and written there; that was copied back over %s and verified, and k3s runs again on %s: nothing was lost. ",
			e.Dest, e.Live, e.Live)
	case e.RollbackErr == nil:
		fmt.Fprintf(&b, "Rolled back: k3s had been started on %s but changed nothing there; it runs again on the original directory %s: nothing was lost. ", e.Dest, e.Live)
	case !e.Started:
		fmt.Fprintf(&b, "THE ROLLBACK FAILED: %v\nk3s was never started on %s, so the original %s (or its backup named above, if it was already renamed) holds the newest data; "+
			"k3s may be stopped. Check `systemctl status` on the node and put the directory back before starting k3s. ", e.RollbackErr, e.Dest, e.Live)
	default:
		fmt.Fprintf(&b, "THE ROLLBACK FAILED: %v\nk3s had been started on %s, so %s HOLDS THE NEWEST DATA; %s holds the data as of the stop "+
			"(and may have been partly overwritten by the copy back). k3s may be stopped or still running on %s. "+
			"Do not start k3s on %s before copying %s back over it with k3s stopped (rsync -aHAXS --numeric-ids --delete --exclude=/%s %s/ %s/), "+
			"or point k3s at %s. ", e.RollbackErr, e.Dest, e.Dest, e.Live, e.Dest, e.Live, e.Dest, MarkerName, e.Dest, e.Live, e.Dest)
	}
	if e.Dest != "" && (e.RollbackErr == nil || !e.Started) {
		fmt.Fprintf(&b, "The partial copy in %s is kept (marked with %s) and is reused by the next attempt.", e.Dest, MarkerName)
	}
	return strings.TrimSpace(b.String())
}

// Unwrap returns the step's error.
func (e *StepError) Unwrap() error { return e.Err }

// move is one direction of the procedure: copy the live directory to dest while k3s runs, stop
// k3s, copy the changes, verify, switch k3s to dest, start, check health; a rollback switches
// back and, when k3s had run on dest, copies what it wrote there back first.
type move struct {
	host    *node.Host
	spec    Spec
	hooks   Hooks
	service string
	// toTarget is true for Migrate (the switch points k3s at spec.Target), false for Restore.
	toTarget bool
	// from is the configured path of the directory k3s uses now (spec.Source or spec.Target),
	// live its real path; dest the directory the copy goes to, destReal its real path; away is
	// where the switch puts the directory at spec.Source (the backup, or Restore's staging dir).
	from, live, dest, destReal, away string
	// rename is false for switch_method config with a source that is a mount point (left where
	// it is).
	rename bool
	// configOnSource and configOnTarget are the k3s configuration file's contents that point k3s
	// at spec.Source and at spec.Target; a nil content means the file does not exist.
	configOnSource, configOnTarget []byte
	// carry are the filesystems mounted below live, relative to it, that are carried to dest as
	// bind mounts.
	carry []string
	// systemd is true when the node runs systemd with systemd-run (the node guard needs it);
	// guard is the guard's unit name once armed.
	systemd bool
	guard   string

	applied, stopped, started, copiedBack bool
	// stoppedAt and startedAt: when k3s was stopped (the downtime starts) and started again.
	stoppedAt, startedAt time.Time
	result               Result
}

// Migrate moves spec.Source to spec.Target on host. On any failure after k3s was stopped it rolls
// back; the error is then a *StepError saying what happened.
func Migrate(ctx context.Context, host *node.Host, spec Spec, hooks Hooks) (Result, error) {
	spec = spec.withDefaults()
	backup := spec.Source + ".pre-migration-" + time.Now().UTC().Format("20060102T150405Z")
	m := &move{host: host, spec: spec, hooks: hooks, toTarget: true, from: spec.Source, dest: spec.Target, away: backup}
	m.result.BackupPath = backup

	pre, err := m.preflight(ctx)
	if err != nil {
		return Result{}, &StepError{Step: StepPreflight, Err: err, Live: spec.Source}
	}
	if spec.MeasureWrite {
		// Next to the source (inside it when it is a mount point of its own), and in the target
		// when it exists (else in its nearest parent): on each filesystem, in a directory that is
		// removed again before the copy.
		dir := path.Dir(pre.sourceReal)
		if pre.sourceMount {
			dir = pre.sourceReal
		}
		if m.result.SourceWriteBps, err = measureWrite(ctx, host, dir); err != nil {
			return Result{}, &StepError{Step: StepPreflight, Err: fmt.Errorf("measuring the source filesystem: %w", err), Live: spec.Source}
		}
		if m.result.TargetWriteBps, err = measureWrite(ctx, host, pre.targetExisting); err != nil {
			return Result{}, &StepError{Step: StepPreflight, Err: fmt.Errorf("measuring the target filesystem: %w", err), Live: spec.Source}
		}
		tflog.Info(ctx, "sequential write speeds", map[string]any{"source_bytes_per_second": m.result.SourceWriteBps, "target_bytes_per_second": m.result.TargetWriteBps})
	}

	// A source that is a mount point cannot be renamed: with config it is left where it is.
	m.rename = !pre.sourceMount
	if !m.rename {
		m.result.BackupPath = spec.Source
	}
	if spec.Method == MethodConfig {
		original, existed, err := readOptional(ctx, host, spec.ConfigFile)
		if err != nil {
			return Result{}, &StepError{Step: StepPreflight, Err: err, Live: spec.Source}
		}
		if existed {
			m.configOnSource = original
		}
		if m.configOnTarget, err = setDataDir(original, spec.Target); err != nil {
			return Result{}, &StepError{Step: StepPreflight, Err: fmt.Errorf("%s: %w", spec.ConfigFile, err), Live: spec.Source}
		}
	}

	if err := m.claimAndRun(ctx); err != nil {
		return Result{}, err
	}
	switch {
	case spec.KeepBackup:
	case !m.rename:
		m.result.Warnings = append(m.result.Warnings, fmt.Sprintf("%s is a mount point and was left as it was; remove its old data yourself once you no longer need it", spec.Source))
	case len(m.carry) > 0:
		m.result.Warnings = append(m.result.Warnings, fmt.Sprintf("The original directory %s was kept although keep_backup = false: the filesystems carried along (%s) are still mounted below it. "+
			"Unmount them there once their mounts at the target are in use (after a reboot they are mounted there through the link), then remove it.", backup, strings.Join(m.carry, ", ")))
	default:
		tflog.Info(ctx, "removing the original directory (keep_backup = false)", map[string]any{"path": backup})
		if _, err := runScript(ctx, host, scriptRemoveTree, backup, spec.Source); err != nil {
			m.result.Warnings = append(m.result.Warnings, fmt.Sprintf("The original directory %s could not be removed: %v", backup, err))
		} else {
			m.result.BackupPath = ""
		}
	}
	return m.result, nil
}

// errLeftInPlace is Restore's refusal for a source that the migration (switch_method config)
// left where it was because it is a mount point: it still holds the data as of the migration, and
// k3s's newer data is only in the target. Moving back would replace the contents of that mount
// point, which no single rename does and so neither a rollback nor the node guard could undo; the
// restore is left to the user, with the commands to run.
func errLeftInPlace(spec Spec) error {
	return fmt.Errorf("%s is a mount point, which the migration left in place: it holds the data as it was at the migration, and k3s's newer data is only in %s. "+
		"The data is not moved back into a mount point automatically. To move back by hand, with k3s stopped: "+
		"rsync -aHAXS --numeric-ids --delete --exclude=/%s %s/ %s/, remove data-dir from %s, start k3s. "+
		"Then set restore_on_destroy = false and destroy (or remove the resource from the state)",
		spec.Source, spec.Target, MarkerName, spec.Target, spec.Source, spec.ConfigFile)
}

// LeftInPlace reports whether a finished migration left spec.Source where it was (a mount point
// under switch_method config), which Restore refuses.
func (r Result) LeftInPlace(spec Spec) bool {
	return spec.Method == MethodConfig && r.BackupPath == spec.Source
}

// Restore moves the data back from spec.Target to spec.Source with the same procedure: copied to
// a staging directory next to the source, which then replaces the link, mount or configuration.
// The target is removed afterwards only when spec.KeepBackup is false.
func Restore(ctx context.Context, host *node.Host, spec Spec, hooks Hooks) (Result, error) {
	spec = spec.withDefaults()
	staging := spec.Source + ".clusterstorage-restore"
	m := &move{host: host, spec: spec, hooks: hooks, from: spec.Target, dest: staging, away: staging, rename: true}

	st, err := readState(ctx, host, spec)
	if err != nil {
		return Result{}, &StepError{Step: StepPreflight, Err: err, Live: spec.Target}
	}
	if !st.inUse {
		return Result{}, &StepError{Step: StepPreflight, Live: spec.Target,
			Err: fmt.Errorf("k3s on this node does not use %s any more (%s): nothing to restore", spec.Target, st.reason)}
	}
	if spec.Method == MethodConfig && sourceIsDir(ctx, host, spec.Source) {
		return Result{}, &StepError{Step: StepPreflight, Live: spec.Target, Err: errLeftInPlace(spec)}
	}
	if _, err := m.preflight(ctx); err != nil {
		return Result{}, &StepError{Step: StepPreflight, Err: err, Live: spec.Target}
	}
	if spec.Method == MethodConfig {
		current, existed, err := readOptional(ctx, host, spec.ConfigFile)
		if err != nil {
			return Result{}, &StepError{Step: StepPreflight, Err: err, Live: spec.Target}
		}
		if existed {
			m.configOnTarget = current
		}
		if m.configOnSource, err = restoredConfig(current, spec.Source); err != nil {
			return Result{}, &StepError{Step: StepPreflight, Err: fmt.Errorf("%s: %w", spec.ConfigFile, err), Live: spec.Target}
		}
	}
	if err := m.claimAndRun(ctx); err != nil {
		return Result{}, err
	}
	if _, err := runOn(ctx, host, node.NewCommand("rm", "-f", "--", path.Join(spec.Source, MarkerName))); err != nil {
		m.result.Warnings = append(m.result.Warnings, fmt.Sprintf("The marker %s could not be removed from %s: %v", MarkerName, spec.Source, err))
	}
	if !spec.KeepBackup {
		tflog.Info(ctx, "removing the migrated copy (keep_backup = false)", map[string]any{"path": spec.Target})
		// The marker names the real path the migration copied from: the source's, which Restore
		// wrote back to (its staging dir is now at spec.Source).
		if _, err := runScript(ctx, host, scriptRemoveCopy, spec.Target, MarkerName, m.sourceRealAfterRestore(ctx)); err != nil {
			m.result.Warnings = append(m.result.Warnings, fmt.Sprintf("The migrated copy %s could not be removed: %v", spec.Target, err))
		}
	}
	return m.result, nil
}

// claimAndRun takes the cluster's claim (Hooks.Claim), runs the steps, and gives the claim back.
func (m *move) claimAndRun(ctx context.Context) error {
	if m.hooks.Claim != nil {
		release, err := m.hooks.Claim(ctx)
		if err != nil {
			return &StepError{Step: StepPreflight, Err: err, Live: m.from}
		}
		defer func() {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.spec.HealthTimeout)
			defer cancel()
			if err := release(rctx); err != nil {
				m.result.Warnings = append(m.result.Warnings, "The node's mid-migration mark could not be taken away: "+err.Error())
			}
		}()
	}
	return m.run(ctx)
}

// run does the steps from the first copy on, rolling back on failure after the stop.
func (m *move) run(ctx context.Context) error {
	steps := []struct {
		step Step
		f    func(context.Context) error
	}{
		{StepDrain, m.hooks.Drain},
		{StepCopy, func(ctx context.Context) error { return m.copy(ctx, true) }},
		{StepStop, m.stopStep},
		{StepFinalCopy, func(ctx context.Context) error { return m.copy(ctx, false) }},
		{StepVerify, func(ctx context.Context) error { return m.verify(ctx, m.live, m.dest) }},
		{StepSwitch, m.switchStep},
		{StepStart, m.startStep},
		{StepHealthy, m.healthyStep},
	}
	for _, s := range steps {
		if s.f == nil { // no drain asked for
			continue
		}
		if err := m.do(ctx, s.step, s.f); err != nil {
			return err
		}
	}
	m.disarmGuard(ctx)
	m.result.Downtime = time.Since(m.stoppedAt)
	m.result.Service = m.service
	m.result.CarriedMounts = m.carry
	if m.hooks.Undrain != nil {
		if err := m.hooks.Undrain(ctx); err != nil {
			m.result.Warnings = append(m.result.Warnings, "The node could not be uncordoned: "+err.Error())
		}
	}
	m.result.Finished = time.Now().UTC()
	return nil
}

// do runs one step of the migration, timed and logged; a step that fails (or a context cancelled
// before it) ends the migration through fail.
func (m *move) do(ctx context.Context, step Step, f func(context.Context) error) error {
	if err := ctx.Err(); err != nil {
		return m.fail(ctx, step, fmt.Errorf("cancelled before it started: %w", context.Cause(ctx)))
	}
	if m.hooks.Before != nil {
		if err := m.hooks.Before(ctx, step); err != nil {
			return m.fail(ctx, step, err)
		}
	}
	start := time.Now()
	tflog.Info(ctx, "k3s data dir migration: "+string(step), map[string]any{"from": m.live, "to": m.dest, "service": m.service})
	if err := f(ctx); err != nil {
		return m.fail(ctx, step, err)
	}
	m.result.Steps = append(m.result.Steps, StepTime{Step: step, Duration: time.Since(start)})
	tflog.Info(ctx, "k3s data dir migration: "+string(step)+" done", map[string]any{"seconds": time.Since(start).Seconds()})
	return nil
}

// fail ends the migration at step: once k3s was stopped it rolls back (and disarms the node guard
// when the rollback succeeded); a drained node is uncordoned. The error says what happened.
func (m *move) fail(ctx context.Context, step Step, err error) error {
	se := &StepError{Step: step, Err: err, Stopped: m.stopped, Live: m.live, Dest: m.dest}
	if m.stopped {
		tflog.Error(ctx, "k3s data dir migration failed after k3s was stopped: rolling back", map[string]any{"step": string(step), "error": err.Error()})
		se.RollbackErr = m.rollback(ctx)
		se.Started, se.CopiedBack = m.started, m.copiedBack
		if se.RollbackErr == nil {
			m.disarmGuard(ctx)
		}
	}
	if m.hooks.Undrain != nil {
		if uerr := m.hooks.Undrain(context.WithoutCancel(ctx)); uerr != nil && se.RollbackErr == nil && m.stopped {
			se.RollbackErr = fmt.Errorf("uncordoning the node: %w", uerr)
		}
	}
	return se
}

// stopStep arms the node guard and stops k3s: from here on a failure rolls back.
func (m *move) stopStep(ctx context.Context) error {
	if m.hooks.BeforeStop != nil {
		if err := m.hooks.BeforeStop(ctx); err != nil {
			return err
		}
	}
	if err := m.armGuard(ctx); err != nil {
		return err
	}
	m.stoppedAt = time.Now()
	m.stopped = true
	return m.stop(ctx, m.live, m.spec.Source)
}

// switchStep points k3s at the copy. Applied is set first: a switch that failed half way is
// undone by the rollback too (the undo steps are safe to run on a switch that was not made).
func (m *move) switchStep(ctx context.Context) error {
	if err := m.guardPhase(ctx, "switched"); err != nil {
		return err
	}
	m.applied = true
	return m.apply(ctx)
}

// startStep starts k3s on the copy.
func (m *move) startStep(ctx context.Context) error {
	if err := m.guardPhase(ctx, "started"); err != nil {
		return err
	}
	m.startedAt = time.Now()
	m.started = true
	return m.start(ctx)
}

// healthyStep waits for k3s to be healthy on the copy, then marks the copy complete: from here on
// it holds what k3s wrote there, and no later copy may write over it.
func (m *move) healthyStep(ctx context.Context) error {
	if err := m.healthy(ctx, m.startedAt); err != nil {
		return err
	}
	if m.toTarget {
		if _, err := runScript(ctx, m.host, scriptMarkComplete, m.dest, MarkerName, m.live); err != nil {
			return fmt.Errorf("marking the copy complete: %w", err)
		}
	}
	return nil
}

// rollback stops k3s if it was started on the new directory, undoes the switch, copies back what
// k3s wrote in the new directory (if anything), starts k3s on the original directory and waits
// for it to be healthy. It ignores cancellation of ctx (a cancelled apply must still leave k3s
// running) but has its own deadline.
func (m *move) rollback(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.spec.RollbackTimeout)
	defer cancel()
	if m.started {
		tflog.Warn(ctx, "rollback: stopping k3s on the new directory")
		// The real path of the new directory: stop looks for holders below it.
		if err := retryCut(ctx, func() error { return m.stop(ctx, m.destReal, m.spec.Source) }); err != nil {
			return fmt.Errorf("stopping k3s on the new directory: %w", err)
		}
	}
	if m.applied {
		tflog.Warn(ctx, "rollback: undoing the switch")
		if err := m.unapply(ctx); err != nil {
			return fmt.Errorf("undoing the switch: %w", err)
		}
	}
	var fi node.FileInfo
	if err := retryCut(ctx, func() (err error) { fi, err = m.host.Stat(ctx, m.live); return err }); err != nil {
		return fmt.Errorf("checking that the original directory %s is in place: %w", m.live, err)
	} else if !fi.IsDir() {
		return fmt.Errorf("the original directory %s is not in place: it is not a directory", m.live)
	}
	if m.started {
		if err := m.copyBack(ctx); err != nil {
			return err
		}
	}
	tflog.Warn(ctx, "rollback: starting k3s on the original directory", map[string]any{"path": m.live})
	startedAt := time.Now()
	if err := retryCut(ctx, func() error { return m.start(ctx) }); err != nil {
		return fmt.Errorf("starting k3s on the original directory: %w", err)
	}
	if err := m.healthy(ctx, startedAt); err != nil {
		return fmt.Errorf("k3s was started on the original directory but is not healthy: %w", err)
	}
	tflog.Warn(ctx, "rollback done: k3s runs on the original directory", map[string]any{"path": m.live})
	return nil
}

// retryCut runs f, a step of the rollback that may safely run twice, up to three times while it
// fails because the SSH connection was cut under it: a cut that made the migration fail often
// reaches the rollback's first commands too (the pool reconnects for the next one).
func retryCut(ctx context.Context, f func() error) error {
	for attempt := 1; ; attempt++ {
		err := f()
		if err == nil || attempt == 3 || !cutUnder(err) || ctx.Err() != nil {
			return err
		}
		tflog.Warn(ctx, "rollback: the SSH connection was cut under a command; running it again", map[string]any{"error": err.Error(), "attempt": attempt})
	}
}

// cutUnder reports whether err is that of a command whose SSH connection was lost, or that was
// killed by a signal (a cut connection's session kills what it ran, and may say so first).
func cutUnder(err error) bool {
	var exit *node.ExitError
	return errors.Is(err, node.ErrConnectionLost) || (errors.As(err, &exit) && exit.Signal != "")
}

// copyBack brings what k3s wrote in dest after it was started there back into live, and
// verifies it: k3s had run on dest, so dest holds the newest data.
func (m *move) copyBack(ctx context.Context) error {
	res, err := runScript(ctx, m.host, scriptDiff, m.dest, m.live, MarkerName)
	if err != nil {
		return fmt.Errorf("comparing %s (where k3s ran) with %s: %w", m.dest, m.live, err)
	}
	if strings.TrimSpace(string(res.Stdout)) == "" {
		tflog.Warn(ctx, "rollback: k3s changed nothing in the new directory", map[string]any{"path": m.dest})
		return nil
	}
	tflog.Warn(ctx, "rollback: k3s wrote in the new directory; copying that back over the original", map[string]any{"from": m.dest, "to": m.live})
	if _, err := runScript(ctx, m.host, scriptCopyBack, m.dest, m.live, MarkerName); err != nil {
		return fmt.Errorf("copying what k3s wrote in %s back to %s: %w", m.dest, m.live, err)
	}
	if err := m.verify(ctx, m.dest, m.live); err != nil {
		return fmt.Errorf("after copying %s back to %s: %w", m.dest, m.live, err)
	}
	m.copiedBack = true
	if m.spec.Method == MethodConfig {
		// The copy's links and kubeconfigs name the path k3s was switched to: name the original's again.
		if _, err := runScript(ctx, m.host, scriptFixup, fixupArgs(m.live, m.from, m.switchedPath(), m.destReal)...); err != nil {
			return fmt.Errorf("pointing the paths in %s back at %s: %w", m.live, m.from, err)
		}
	}
	return nil
}

// switchedPath is the path k3s's configuration names after the switch: where the data dir is
// seen once the switch is made.
func (m *move) switchedPath() string {
	if m.toTarget {
		return m.spec.Target
	}
	return m.spec.Source
}

// sourceRealAfterRestore is the real path of spec.Source once Restore put the data back there
// (spec.Source itself when it cannot be resolved).
func (m *move) sourceRealAfterRestore(ctx context.Context) string {
	res, err := runOn(ctx, m.host, node.NewCommand("realpath", "-e", "--", m.spec.Source))
	if err != nil {
		return m.spec.Source
	}
	return strings.TrimSpace(string(res.Stdout))
}
