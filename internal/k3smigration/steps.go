package k3smigration

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/fio"
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
	// ConfigFile is the k3s configuration file (MethodConfig).
	ConfigFile string
	// FstabFile is where MethodBindMount makes its mount permanent.
	FstabFile string
	// KeepBackup keeps the renamed original directory after success.
	KeepBackup bool
	// MarginBytes is the free space the target must have beyond the size of the data.
	MarginBytes int64
	// MeasureWrite measures sequential writes with fio on both filesystems before the copy.
	MeasureWrite bool
	// StopTimeout bounds stopping k3s; HealthTimeout bounds waiting for it to be healthy after a
	// start; RollbackTimeout bounds a rollback (which ignores cancellation).
	StopTimeout, HealthTimeout, RollbackTimeout time.Duration
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
	return s
}

// CheckPath validates one path without reaching the node: absolute, clean, not a system
// directory. name says which attribute it is, for the error.
func CheckPath(name, p string) error {
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

// StepError is a failed migration: which step failed, whether k3s had been stopped, and how the
// rollback went.
type StepError struct {
	Step Step
	Err  error
	// Stopped is true when k3s had been stopped before the failure (a rollback was needed).
	Stopped bool
	// RollbackErr is the rollback's failure; nil when it succeeded or was not needed.
	RollbackErr error
	// Live is the directory k3s used before, which the migration only ever read.
	Live string
	// Dest is the directory the copy went to.
	Dest string
}

// Error names the step, the cause and the state the node was left in.
func (e *StepError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "step %q failed: %v\n\n", e.Step, e.Err)
	switch {
	case !e.Stopped:
		fmt.Fprintf(&b, "k3s was not stopped and %s was only read: nothing was lost. ", e.Live)
	case e.RollbackErr == nil:
		fmt.Fprintf(&b, "Rolled back: k3s runs again on the original directory %s, which was only read: nothing was lost. ", e.Live)
	default:
		fmt.Fprintf(&b, "THE ROLLBACK FAILED: %v\nThe original data is intact in %s (or in the backup named above if it was already renamed); "+
			"k3s may be stopped. Check `systemctl status` on the node and put the directory back before starting k3s. ", e.RollbackErr, e.Live)
	}
	if e.Dest != "" {
		fmt.Fprintf(&b, "The partial copy in %s is kept (marked with %s) and is reused by the next attempt.", e.Dest, MarkerName)
	}
	return strings.TrimSpace(b.String())
}

// Unwrap returns the step's error.
func (e *StepError) Unwrap() error { return e.Err }

// move is one direction of the procedure: copy the live directory to dest while k3s runs, stop
// k3s, copy the changes, verify, apply (switch k3s to dest), start, check health; undo reverses
// apply.
type move struct {
	host    *node.Host
	spec    Spec
	hooks   Hooks
	service string
	// live is the real path of the directory k3s uses now; dest the directory the copy goes to,
	// destReal its real path.
	live, dest, destReal string
	apply                func(ctx context.Context) error
	undo                 func(ctx context.Context) error

	applied, stopped, started bool
	result                    Result
}

// Migrate moves spec.Source to spec.Target on host. On any failure after k3s was stopped it rolls
// back; the error is then a *StepError saying what happened.
func Migrate(ctx context.Context, host *node.Host, spec Spec, hooks Hooks) (Result, error) {
	spec = spec.withDefaults()
	backup := spec.Source + ".pre-migration-" + time.Now().UTC().Format("20060102T150405Z")
	m := &move{host: host, spec: spec, hooks: hooks, dest: spec.Target}
	m.result.BackupPath = backup

	pre, err := m.preflight(ctx, spec.Source, spec.Target)
	if err != nil {
		return Result{}, &StepError{Step: StepPreflight, Err: err, Live: spec.Source}
	}
	m.live, m.destReal = pre.sourceReal, pre.targetReal
	m.result.SourceFS, m.result.TargetFS = pre.sourceFS, pre.targetFS
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
	rename := !pre.sourceMount
	if !rename {
		m.result.BackupPath = spec.Source
	}
	var originalConfig []byte
	var configExisted bool
	if spec.Method == MethodConfig {
		originalConfig, configExisted, err = readOptional(ctx, host, spec.ConfigFile)
		if err != nil {
			return Result{}, &StepError{Step: StepPreflight, Err: err, Live: spec.Source}
		}
		if _, err := setDataDir(originalConfig, spec.Target); err != nil {
			return Result{}, &StepError{Step: StepPreflight, Err: fmt.Errorf("%s: %w", spec.ConfigFile, err), Live: spec.Source}
		}
	}
	m.apply = func(ctx context.Context) error {
		switch spec.Method {
		case MethodConfig:
			content, err := setDataDir(originalConfig, spec.Target)
			if err != nil {
				return err
			}
			if err := writeConfig(ctx, host, spec.ConfigFile, content); err != nil {
				return err
			}
			if !rename {
				return nil
			}
			if _, err := runOn(ctx, host, node.Script(renameScript, spec.Source, backup)); err != nil {
				return errors.Join(err, restoreConfig(ctx, host, spec.ConfigFile, originalConfig, configExisted))
			}
			return nil
		case MethodBindMount:
			if _, err := runOn(ctx, host, node.Script(bindSwitchScript, spec.Source, spec.Target, backup)); err != nil {
				return err
			}
			if err := addFstab(ctx, host, spec.FstabFile, spec.Target, spec.Source); err != nil {
				_, undoErr := runOn(ctx, host, node.Script(undoSwitchScript, spec.Source, spec.Target, backup))
				return errors.Join(err, undoErr)
			}
			return nil
		default:
			_, err := runOn(ctx, host, node.Script(symlinkSwitchScript, spec.Source, spec.Target, backup))
			return err
		}
	}
	m.undo = func(ctx context.Context) error {
		var errs []error
		if spec.Method == MethodBindMount {
			errs = append(errs, removeFstab(ctx, host, spec.FstabFile, spec.Target, spec.Source))
		}
		if spec.Method == MethodConfig {
			errs = append(errs, restoreConfig(ctx, host, spec.ConfigFile, originalConfig, configExisted))
			if !rename {
				return errors.Join(errs...)
			}
			if _, err := runOn(ctx, host, node.Script(renameScript, backup, spec.Source)); err != nil && !sourceIsDir(ctx, host, spec.Source) {
				errs = append(errs, err)
			}
			return errors.Join(errs...)
		}
		_, err := runOn(ctx, host, node.Script(undoSwitchScript, spec.Source, spec.Target, backup))
		return errors.Join(append(errs, err)...)
	}

	if err := m.run(ctx); err != nil {
		return Result{}, err
	}
	if !spec.KeepBackup && !rename {
		m.result.Warnings = append(m.result.Warnings, fmt.Sprintf("%s is a mount point and was left as it was; remove its old data yourself once you no longer need it", spec.Source))
	} else if !spec.KeepBackup {
		tflog.Info(ctx, "removing the original directory (keep_backup = false)", map[string]any{"path": backup})
		if _, err := runOn(ctx, host, node.Script(removeTreeScript, backup, spec.Source)); err != nil {
			m.result.Warnings = append(m.result.Warnings, fmt.Sprintf("The original directory %s could not be removed: %v", backup, err))
		} else {
			m.result.BackupPath = ""
		}
	}
	return m.result, nil
}

// Restore moves the data back from spec.Target to spec.Source with the same procedure: copied to
// a staging directory next to the source, which then replaces the link, mount or configuration.
// The target is removed afterwards only when spec.KeepBackup is false.
func Restore(ctx context.Context, host *node.Host, spec Spec, hooks Hooks) (Result, error) {
	spec = spec.withDefaults()
	staging := spec.Source + ".clusterstorage-restore"
	m := &move{host: host, spec: spec, hooks: hooks, dest: staging}

	st, err := readState(ctx, host, spec)
	if err != nil {
		return Result{}, &StepError{Step: StepPreflight, Err: err, Live: spec.Target}
	}
	if !st.inUse {
		return Result{}, &StepError{Step: StepPreflight, Live: spec.Target,
			Err: fmt.Errorf("k3s on this node does not use %s any more (%s): nothing to restore", spec.Target, st.reason)}
	}
	pre, err := m.preflight(ctx, spec.Target, staging)
	if err != nil {
		return Result{}, &StepError{Step: StepPreflight, Err: err, Live: spec.Target}
	}
	m.live, m.destReal = pre.sourceReal, pre.targetReal
	m.result.SourceFS, m.result.TargetFS = pre.sourceFS, pre.targetFS

	var currentConfig []byte
	var configExisted bool
	if spec.Method == MethodConfig {
		if currentConfig, configExisted, err = readOptional(ctx, host, spec.ConfigFile); err != nil {
			return Result{}, &StepError{Step: StepPreflight, Err: err, Live: spec.Target}
		}
	}
	m.apply = func(ctx context.Context) error {
		switch spec.Method {
		case MethodConfig:
			content, err := restoredConfig(currentConfig, spec.Source)
			if err != nil {
				return err
			}
			if err := writeConfig(ctx, host, spec.ConfigFile, content); err != nil {
				return err
			}
			if _, err := runOn(ctx, host, node.Script(renameScript, staging, spec.Source)); err != nil {
				return errors.Join(err, restoreConfig(ctx, host, spec.ConfigFile, currentConfig, configExisted))
			}
		default:
			if _, err := runOn(ctx, host, node.Script(undoSwitchScript, spec.Source, spec.Target, staging)); err != nil {
				return err
			}
			if spec.Method == MethodBindMount {
				if err := removeFstab(ctx, host, spec.FstabFile, spec.Target, spec.Source); err != nil {
					return err
				}
			}
		}
		_, err := runOn(ctx, host, node.NewCommand("rm", "-f", "--", path.Join(spec.Source, MarkerName)))
		return err
	}
	m.undo = func(ctx context.Context) error {
		switch spec.Method {
		case MethodConfig:
			errs := []error{restoreConfig(ctx, host, spec.ConfigFile, currentConfig, configExisted)}
			if sourceIsDir(ctx, host, spec.Source) {
				_, err := runOn(ctx, host, node.Script(renameScript, spec.Source, staging))
				errs = append(errs, err)
			}
			return errors.Join(errs...)
		case MethodBindMount:
			if _, err := runOn(ctx, host, node.Script(bindSwitchScript, spec.Source, spec.Target, staging)); err != nil {
				return err
			}
			return addFstab(ctx, host, spec.FstabFile, spec.Target, spec.Source)
		default:
			_, err := runOn(ctx, host, node.Script(symlinkSwitchScript, spec.Source, spec.Target, staging))
			return err
		}
	}
	if err := m.run(ctx); err != nil {
		return Result{}, err
	}
	if !spec.KeepBackup {
		tflog.Info(ctx, "removing the migrated copy (keep_backup = false)", map[string]any{"path": spec.Target})
		if _, err := runOn(ctx, host, node.Script(removeCopyScript, spec.Target, MarkerName, spec.Source)); err != nil {
			m.result.Warnings = append(m.result.Warnings, fmt.Sprintf("The migrated copy %s could not be removed: %v", spec.Target, err))
		}
	}
	return m.result, nil
}

// run does the steps from the first copy on, rolling back on failure after the stop.
func (m *move) run(ctx context.Context) (err error) {
	var stoppedAt time.Time
	fail := func(step Step, err error) error {
		se := &StepError{Step: step, Err: err, Stopped: m.stopped, Live: m.live, Dest: m.dest}
		if m.stopped {
			tflog.Error(ctx, "k3s data dir migration failed after k3s was stopped: rolling back", map[string]any{"step": string(step), "error": err.Error()})
			se.RollbackErr = m.rollback(ctx)
		}
		if m.hooks.Undrain != nil {
			if uerr := m.hooks.Undrain(context.WithoutCancel(ctx)); uerr != nil && se.RollbackErr == nil && m.stopped {
				se.RollbackErr = fmt.Errorf("uncordoning the node: %w", uerr)
			}
		}
		return se
	}
	do := func(step Step, f func(context.Context) error) error {
		if err := ctx.Err(); err != nil {
			return fail(step, fmt.Errorf("cancelled before it started: %w", context.Cause(ctx)))
		}
		if m.hooks.Before != nil {
			if err := m.hooks.Before(ctx, step); err != nil {
				return fail(step, err)
			}
		}
		start := time.Now()
		tflog.Info(ctx, "k3s data dir migration: "+string(step), map[string]any{"from": m.live, "to": m.dest, "service": m.service})
		if err := f(ctx); err != nil {
			return fail(step, err)
		}
		m.result.Steps = append(m.result.Steps, StepTime{Step: step, Duration: time.Since(start)})
		tflog.Info(ctx, "k3s data dir migration: "+string(step)+" done", map[string]any{"seconds": time.Since(start).Seconds()})
		return nil
	}

	if m.hooks.Drain != nil {
		if err := do(StepDrain, m.hooks.Drain); err != nil {
			return err
		}
	}
	if err := do(StepCopy, func(ctx context.Context) error { return m.copy(ctx, true) }); err != nil {
		return err
	}
	if err := do(StepStop, func(ctx context.Context) error {
		if m.hooks.BeforeStop != nil {
			if err := m.hooks.BeforeStop(ctx); err != nil {
				return err
			}
		}
		stoppedAt = time.Now()
		m.stopped = true
		return m.stop(ctx, m.live, m.spec.Source)
	}); err != nil {
		return err
	}
	if err := do(StepFinalCopy, func(ctx context.Context) error { return m.copy(ctx, false) }); err != nil {
		return err
	}
	if err := do(StepVerify, m.verify); err != nil {
		return err
	}
	if err := do(StepSwitch, func(ctx context.Context) error {
		// Applied is set first: a switch that failed half way is undone by the rollback too (the
		// undo scripts are safe to run on a switch that was not made).
		m.applied = true
		return m.apply(ctx)
	}); err != nil {
		return err
	}
	var startedAt time.Time
	if err := do(StepStart, func(ctx context.Context) error {
		startedAt = time.Now()
		m.started = true
		return m.start(ctx)
	}); err != nil {
		return err
	}
	if err := do(StepHealthy, func(ctx context.Context) error { return m.healthy(ctx, startedAt) }); err != nil {
		return err
	}
	m.result.Downtime = time.Since(stoppedAt)
	m.result.Service = m.service
	if m.hooks.Undrain != nil {
		if err := m.hooks.Undrain(ctx); err != nil {
			m.result.Warnings = append(m.result.Warnings, "The node could not be uncordoned: "+err.Error())
		}
	}
	m.result.Finished = time.Now().UTC()
	return nil
}

// rollback stops k3s if it was started on the new directory, undoes the switch, starts k3s on the
// original directory and waits for it to be healthy. It ignores cancellation of ctx (a cancelled
// apply must still leave k3s running) but has its own deadline.
func (m *move) rollback(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.spec.RollbackTimeout)
	defer cancel()
	if m.started {
		tflog.Warn(ctx, "rollback: stopping k3s on the new directory")
		// The real path of the new directory: stop cleans up below it.
		if err := m.stop(ctx, m.destReal, m.spec.Source); err != nil {
			return fmt.Errorf("stopping k3s on the new directory: %w", err)
		}
	}
	if m.applied {
		tflog.Warn(ctx, "rollback: undoing the switch")
		if err := m.undo(ctx); err != nil {
			return fmt.Errorf("undoing the switch: %w", err)
		}
	}
	if !sourceIsDir(ctx, m.host, m.live) {
		return fmt.Errorf("the original directory %s is not in place", m.live)
	}
	tflog.Warn(ctx, "rollback: starting k3s on the original directory", map[string]any{"path": m.live})
	startedAt := time.Now()
	if err := m.start(ctx); err != nil {
		return fmt.Errorf("starting k3s on the original directory: %w", err)
	}
	if err := m.healthy(ctx, startedAt); err != nil {
		return fmt.Errorf("k3s was started on the original directory but is not healthy: %w", err)
	}
	tflog.Warn(ctx, "rollback done: k3s runs on the original directory", map[string]any{"path": m.live})
	return nil
}

// preflightInfo is what preflight learnt.
type preflightInfo struct {
	sourceReal, targetReal string
	// targetExisting is target or its nearest existing parent.
	targetExisting string
	// sourceMount is true when the source is itself a mount point (only allowed for config).
	sourceMount        bool
	sourceFS, targetFS Filesystem
}

// preflight checks that from is a k3s data directory, that to is absent, empty or an earlier
// copy of from, that to's filesystem has room, and finds the service.
func (m *move) preflight(ctx context.Context, from, to string) (preflightInfo, error) {
	var info preflightInfo
	if err := CheckPaths(from, to); err != nil {
		return info, err
	}
	if m.hooks.Before != nil {
		if err := m.hooks.Before(ctx, StepPreflight); err != nil {
			return info, err
		}
	}
	service, units, err := m.detectService(ctx)
	if err != nil {
		return info, err
	}
	m.service = service
	if m.spec.Method == MethodConfig && strings.Contains(units[service], "data-dir") {
		return info, fmt.Errorf("the %s unit sets the data dir on its command line (`systemctl cat %s` shows data-dir), which wins over %s: "+
			"use switch_method = \"symlink\" or \"bind_mount\", or move the setting into the config file", service, service, m.spec.ConfigFile)
	}

	res, err := runOn(ctx, m.host, node.Script(preflightScript, from, to, MarkerName))
	if err != nil {
		return info, err
	}
	kv := parseKV(res.Stdout)
	switch first(kv, "source") {
	case "dir":
	case "symlink":
		return info, fmt.Errorf("%s is a symbolic link to %s, not a directory: it looks migrated already", from, first(kv, "source_link"))
	case "missing":
		return info, fmt.Errorf("%s does not exist on the node", from)
	default:
		return info, fmt.Errorf("%s is not a directory", from)
	}
	info.sourceReal = first(kv, "source_real")
	if !contains(kv["layout"], "server") && !contains(kv["layout"], "agent") {
		return info, fmt.Errorf("%s does not look like a k3s data directory (it has neither server/ nor agent/)", from)
	}
	if tools := kv["missing_tool"]; len(tools) > 0 {
		return info, fmt.Errorf("the node lacks %s: install it (Debian/Ubuntu: apt-get install rsync util-linux coreutils)", strings.Join(tools, ", "))
	}
	info.sourceMount = first(kv, "source_mountpoint") == "yes"
	if info.sourceMount && m.spec.Method != MethodConfig {
		return info, fmt.Errorf("%s is itself a mount point, so it cannot be renamed: use switch_method = \"config\", or move the mount instead", from)
	}
	info.targetReal = first(kv, "target_real")
	info.targetExisting = first(kv, "target_existing")
	if err := CheckPaths(info.sourceReal, info.targetReal); err != nil {
		return info, fmt.Errorf("after resolving symbolic links: %w", err)
	}
	switch first(kv, "target") {
	case "missing", "empty":
	case "nonempty":
		if marker := first(kv, "target_marker"); marker != from {
			return info, fmt.Errorf("%s is not empty: the target must be absent or empty (or hold an unfinished copy of %s)", to, from)
		}
		tflog.Info(ctx, "the target holds an unfinished copy from an earlier attempt: it is brought up to date", map[string]any{"target": to})
	case "symlink":
		return info, fmt.Errorf("%s is a symbolic link: name the directory itself", to)
	default:
		return info, fmt.Errorf("%s exists and is not a directory", to)
	}
	if info.sourceFS, err = parseDF(first(kv, "source_df")); err != nil {
		return info, err
	}
	if info.targetFS, err = parseDF(first(kv, "target_df")); err != nil {
		return info, err
	}
	used, err1 := strconv.ParseInt(first(kv, "source_used"), 10, 64)
	apparent, err2 := strconv.ParseInt(first(kv, "source_apparent"), 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return info, fmt.Errorf("reading the size of %s: %w (output %q)", from, err, res.Stdout)
	}
	need := max(used, apparent) + m.spec.MarginBytes
	if m.spec.MeasureWrite {
		spec, err := measureSpec()
		if err != nil {
			return info, err
		}
		need += fio.SpaceBytes(spec)
	}
	tflog.Info(ctx, "k3s data dir migration: preflight", map[string]any{
		"service": service, "source": from, "source_filesystem": info.sourceFS.String(), "target": to,
		"target_filesystem": info.targetFS.String(), "data_bytes": max(used, apparent), "margin_bytes": m.spec.MarginBytes,
		"same_filesystem": first(kv, "same_fs") == "yes",
	})
	if first(kv, "same_fs") == "yes" {
		tflog.Warn(ctx, "source and target are on the same filesystem: the migration frees no space and gains no speed")
	}
	if info.targetFS.AvailBytes < need {
		return info, fmt.Errorf("not enough free space for %s: the data takes %s and the margin is %s, but %s has %s free",
			to, human(max(used, apparent)), human(m.spec.MarginBytes), info.targetFS.MountPoint, human(info.targetFS.AvailBytes))
	}
	return info, nil
}

// detectService finds the k3s unit, returning it and the unit texts by name.
func (m *move) detectService(ctx context.Context) (string, map[string]string, error) {
	res, err := runOn(ctx, m.host, node.Script(servicesScript))
	if err != nil {
		return "", nil, err
	}
	states := map[string]string{}
	units := map[string]string{}
	var current string
	for _, line := range strings.Split(string(res.Stdout), "\n") {
		switch {
		case strings.HasPrefix(line, "service="):
			f := strings.Fields(strings.TrimPrefix(line, "service="))
			if len(f) >= 1 {
				states[f[0]] = strings.Join(f[1:], " ")
			}
		case strings.HasPrefix(line, "unit="):
			current = strings.TrimPrefix(line, "unit=")
		case current != "":
			units[current] += line + "\n"
		}
	}
	if m.spec.Service != "" {
		state, ok := states[m.spec.Service]
		if !ok {
			return "", nil, fmt.Errorf("systemd has no %s unit on this node", m.spec.Service)
		}
		if state != "active" {
			return "", nil, fmt.Errorf("%s is %q, not active: the migration checks k3s's health before and after, so start it first", m.spec.Service, state)
		}
		return m.spec.Service, units, nil
	}
	var active []string
	for name, state := range states {
		if state == "active" {
			active = append(active, name)
		}
	}
	sort.Strings(active)
	switch len(active) {
	case 1:
		return active[0], units, nil
	case 0:
		if len(states) == 0 {
			return "", nil, errors.New("systemd has neither a k3s nor a k3s-agent unit on this node")
		}
		return "", nil, fmt.Errorf("no k3s unit is active (%v): start k3s first, or set service", states)
	default:
		return "", nil, fmt.Errorf("both %s are active: set service", strings.Join(active, " and "))
	}
}

// copy runs rsync from live to dest. While k3s runs, files vanishing mid-copy (rsync exit 24) are
// expected.
func (m *move) copy(ctx context.Context, running bool) error {
	res, err := runOn(ctx, m.host, node.Script(copyScript, m.live, m.dest, MarkerName))
	var exitErr *node.ExitError
	if errors.As(err, &exitErr) {
		switch {
		case exitErr.ExitCode == 24 && running:
			tflog.Debug(ctx, "some files vanished during the first copy (k3s is running); the final copy catches up")
			err = nil
		case exitErr.ExitCode == 75:
			return fmt.Errorf("another copy into %s is still running (its lock %s is held): %w", m.dest, MarkerName, err)
		}
	}
	if err != nil {
		return fmt.Errorf("copying %s to %s: %w", m.live, m.dest, err)
	}
	stats := parseRsyncStats(res.Stdout)
	m.result.BytesCopied += stats.bytes
	tflog.Info(ctx, "copy finished", map[string]any{"files_transferred": stats.files, "bytes_transferred": stats.bytes, "k3s_running": running})
	return nil
}

// stop stops k3s and everything that keeps files below its data dir open: the unit, then
// k3s-killall.sh (containers), then containerd shims still holding the directory (with their
// children and process groups), then the mounts below it. It fails, naming them, when other
// processes still hold it. dirs are every path the data dir is seen at: its real path, and the
// source path k3s opens it by (a bind mount shows there, not at the real path). Each round trip
// does as much as it can: k3s is down meanwhile.
func (m *move) stop(ctx context.Context, dirs ...string) error {
	dirs = dedupe(dirs)
	dir := dirs[0]
	stopCtx, cancel := context.WithTimeout(ctx, m.spec.StopTimeout)
	defer cancel()
	res, err := runOn(stopCtx, m.host, node.Script(stopScript, append([]string{m.service}, dirs...)...))
	if err != nil {
		return fmt.Errorf("stopping %s: %w", m.service, err)
	}
	look := parseLook(res.Stdout, dirs)
	if first(look.kv, "killall") == "absent" {
		tflog.Warn(ctx, "k3s-killall.sh is not installed on the node: only containerd shims holding the data dir are stopped")
	}

	// Shims: k3s's unit stops with KillMode=process, so containers and their shims outlive it.
	deadline := time.Now().Add(15 * time.Second)
	signal := "TERM"
	groups := map[int]bool{}
	for len(look.procs.procs) > 0 {
		kill := look.procs.shimTrees(groups)
		if len(kill) == 0 {
			return fmt.Errorf("processes other than containerd shims still use %s: %s; stop them and try again", dir, look.procs.describe())
		}
		if time.Now().After(deadline) {
			if signal == "KILL" {
				return fmt.Errorf("processes still use %s after SIGKILL: %s", dir, look.procs.describe())
			}
			signal, deadline = "KILL", time.Now().Add(5*time.Second)
		}
		tflog.Warn(ctx, "stopping containerd shims that still hold the data dir", map[string]any{"signal": signal, "pids": kill, "holders": look.procs.describe()})
		args := []string{signal, strconv.Itoa(len(kill))}
		for _, pid := range kill {
			args = append(args, strconv.Itoa(pid))
		}
		if res, err = runOn(stopCtx, m.host, node.Script(killScript, append(args, dirs...)...)); err != nil {
			return fmt.Errorf("stopping containerd shims: %w", err)
		}
		look = parseLook(res.Stdout, dirs)
	}

	if len(look.mounts) > 0 {
		tflog.Info(ctx, "unmounting below the data dir", map[string]any{"mount_points": look.mounts})
		args := append([]string{m.service, strconv.Itoa(len(look.mounts))}, look.mounts...)
		if res, err = runOn(stopCtx, m.host, node.Script(umountScript, append(args, dirs...)...)); err != nil {
			return fmt.Errorf("unmounting below %s: %w", dir, err)
		}
		look = parseLook(res.Stdout, dirs)
		if len(look.mounts) > 0 {
			return fmt.Errorf("filesystems are still mounted below %s: %s (%s)", dir, strings.Join(look.mounts, ", "), strings.Join(look.kv["umount_error"], "; "))
		}
		if len(look.procs.procs) > 0 {
			return fmt.Errorf("processes use %s again: %s", dir, look.procs.describe())
		}
	}
	if state := first(look.kv, "state"); state == "active" {
		return fmt.Errorf("%s is active again after it was stopped (restarted by something else?)", m.service)
	}
	return nil
}

// look is what stopScript, killScript and umountScript report.
type look struct {
	kv     map[string][]string
	procs  processes
	mounts []string
}

func parseLook(out []byte, dirs []string) look {
	l := look{kv: parseKV(out), procs: parseProcesses(out)}
	var table []byte
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, "mountinfo "); ok {
			table = append(append(table, rest...), '\n')
		}
	}
	for _, dir := range dirs {
		l.mounts = append(l.mounts, mountsBelow(table, dir)...)
	}
	l.mounts = dedupe(l.mounts)
	sort.SliceStable(l.mounts, func(i, j int) bool { return len(l.mounts[i]) > len(l.mounts[j]) })
	return l
}

// dedupe drops repeated strings, keeping the first of each.
func dedupe(list []string) []string {
	var out []string
	for _, s := range list {
		if !contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// verify compares dest with live: nothing left for rsync to change, the same counts and bytes, and
// the same checksums of the datastore, token and credentials.
func (m *move) verify(ctx context.Context) error {
	// The three looks run at once (k3s is down meanwhile); each is a read-only walk.
	var (
		wg         sync.WaitGroup
		diff       *node.Result
		a, b       manifest
		diffErr    error
		errA, errB error
	)
	wg.Add(3)
	go func() {
		defer wg.Done()
		diff, diffErr = runOn(ctx, m.host, node.Script(diffScript, m.live, m.dest, MarkerName))
	}()
	go func() { defer wg.Done(); a, errA = m.manifest(ctx, m.live) }()
	go func() { defer wg.Done(); b, errB = m.manifest(ctx, m.dest) }()
	wg.Wait()
	if diffErr != nil {
		return fmt.Errorf("comparing %s with %s: %w", m.live, m.dest, diffErr)
	}
	if d := strings.TrimSpace(string(diff.Stdout)); d != "" {
		return fmt.Errorf("the copy differs from the original after the final copy:\n%s", firstLines(d, 20))
	}
	if err := errors.Join(errA, errB); err != nil {
		return err
	}
	if a.count != b.count {
		return fmt.Errorf("the copy differs from the original: %s has %s, %s has %s", m.live, a.count, m.dest, b.count)
	}
	if len(a.sums) == 0 {
		return fmt.Errorf("found none of server/db, server/token or agent's keys in %s to checksum", m.live)
	}
	for f, sum := range a.sums {
		if b.sums[f] != sum {
			return fmt.Errorf("checksum of %s differs: %s in %s, %q in %s", f, sum, m.live, b.sums[f], m.dest)
		}
	}
	if len(b.sums) != len(a.sums) {
		return fmt.Errorf("the copy holds %d checksummed files, the original %d", len(b.sums), len(a.sums))
	}
	m.result.Entries = a.entries
	m.result.FilesCopied = a.files
	tflog.Info(ctx, "copy verified", map[string]any{"counts": a.count, "checksummed_files": len(a.sums)})
	return nil
}

type manifest struct {
	count          string
	entries, files int64
	sums           map[string]string
}

func (m *move) manifest(ctx context.Context, dir string) (manifest, error) {
	res, err := runOn(ctx, m.host, node.Script(manifestScript, dir, MarkerName))
	if err != nil {
		return manifest{}, fmt.Errorf("listing %s: %w", dir, err)
	}
	return parseManifest(res.Stdout)
}

// start starts the unit.
func (m *move) start(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, m.spec.HealthTimeout)
	defer cancel()
	if _, err := runOn(ctx, m.host, node.NewCommand("systemctl", "start", m.service)); err != nil {
		return fmt.Errorf("systemctl start %s: %w", m.service, err)
	}
	return nil
}

// healthy waits until the unit is active and the node is Ready, having reported since it started.
func (m *move) healthy(ctx context.Context, since time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, m.spec.HealthTimeout)
	defer cancel()
	reason := ""
	for {
		res, _ := runOn(ctx, m.host, node.NewCommand("systemctl", "is-active", m.service)) //nolint:errcheck // is-active exits non-zero when not active; the output says why.
		state := ""
		if res != nil {
			state = strings.TrimSpace(string(res.Stdout))
		}
		switch {
		case state == "failed":
			return fmt.Errorf("%s failed after it was started (see `journalctl -u %s` on the node)", m.service, m.service)
		case state != "active":
			reason = fmt.Sprintf("%s is %q", m.service, state)
		case m.hooks.NodeReady == nil:
			return nil
		default:
			ready, why, err := m.hooks.NodeReady(ctx, since)
			if err != nil {
				return err
			}
			if ready {
				return nil
			}
			reason = why
		}
		if err := sleepCtx(ctx, 500*time.Millisecond); err != nil {
			return fmt.Errorf("k3s not healthy within %s: %s", m.spec.HealthTimeout, reason)
		}
	}
}

// State is how the node relates to a finished migration now.
type State struct {
	// InUse is true when k3s is still switched to the target.
	InUse bool
	// Reason says what was found when InUse is false.
	Reason string
}

type state struct {
	inUse  bool
	reason string
}

// ReadState checks whether k3s on the node still uses spec.Target through spec.Method.
func ReadState(ctx context.Context, host *node.Host, spec Spec) (State, error) {
	st, err := readState(ctx, host, spec.withDefaults())
	return State{InUse: st.inUse, Reason: st.reason}, err
}

func readState(ctx context.Context, host *node.Host, spec Spec) (state, error) {
	res, err := runOn(ctx, host, node.Script(stateScript, spec.Source, spec.Target))
	if err != nil {
		return state{}, err
	}
	kv := parseKV(res.Stdout)
	if first(kv, "target") != "dir" {
		return state{reason: spec.Target + " is gone"}, nil
	}
	src := first(kv, "source")
	switch spec.Method {
	case MethodConfig:
		content, _, err := readOptional(ctx, host, spec.ConfigFile)
		if err != nil {
			return state{}, err
		}
		if dir := dataDir(content); dir != spec.Target {
			return state{reason: fmt.Sprintf("data-dir in %s is %q", spec.ConfigFile, dir)}, nil
		}
		return state{inUse: true}, nil
	case MethodBindMount:
		if first(kv, "mount") != "yes" || first(kv, "same") != "yes" {
			return state{reason: fmt.Sprintf("%s is not a bind mount of %s (source is %s)", spec.Source, spec.Target, src)}, nil
		}
		return state{inUse: true}, nil
	default:
		if src != "symlink "+spec.Target {
			return state{reason: fmt.Sprintf("%s is no longer a link to %s (it is: %s)", spec.Source, spec.Target, src)}, nil
		}
		return state{inUse: true}, nil
	}
}

// sourceIsDir reports whether p is a real directory (not a link), false on any error.
func sourceIsDir(ctx context.Context, host *node.Host, p string) bool {
	fi, err := host.Stat(ctx, p)
	return err == nil && fi.IsDir()
}

// readOptional reads a file that may be missing.
func readOptional(ctx context.Context, host *node.Host, p string) ([]byte, bool, error) {
	b, err := host.ReadFile(ctx, p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	return b, err == nil, err
}

func writeConfig(ctx context.Context, host *node.Host, p string, content []byte) error {
	if err := host.MkdirAll(ctx, path.Dir(p), node.DirOptions{}); err != nil {
		return err
	}
	tflog.Info(ctx, "writing the k3s configuration", map[string]any{"path": p})
	return host.WriteFile(ctx, p, content, 0o600)
}

// restoreConfig puts back the configuration file as it was (removing it when it did not exist).
func restoreConfig(ctx context.Context, host *node.Host, p string, content []byte, existed bool) error {
	if !existed {
		_, err := runOn(ctx, host, node.NewCommand("rm", "-f", "--", p))
		return err
	}
	return host.WriteFile(ctx, p, content, 0o600)
}

func addFstab(ctx context.Context, host *node.Host, fstab, target, source string) error {
	content, _, err := readOptional(ctx, host, fstab)
	if err != nil {
		return err
	}
	return host.WriteFile(ctx, fstab, fstabWith(content, target, source), 0o644)
}

func removeFstab(ctx context.Context, host *node.Host, fstab, target, source string) error {
	content, existed, err := readOptional(ctx, host, fstab)
	if err != nil || !existed {
		return err
	}
	out := fstabWithout(content, target, source)
	if string(out) == string(content) {
		return nil
	}
	return host.WriteFile(ctx, fstab, out, 0o644)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// scriptNames name this package's scripts in errors, which would otherwise show their whole text.
var scriptNames = map[string]string{
	preflightScript: "preflight checks", servicesScript: "k3s unit detection", copyScript: "rsync copy", diffScript: "rsync comparison",
	manifestScript: "listing and checksums", stopScript: "stop and k3s-killall.sh", killScript: "stopping containerd shims",
	umountScript: "unmounting", symlinkSwitchScript: "symlink switch", renameScript: "rename", bindSwitchScript: "bind mount switch",
	undoSwitchScript: "undoing the switch", stateScript: "state check", removeTreeScript: "removing the backup", removeCopyScript: "removing the copy",
}

// remoteError is a node command's error with the command's script replaced by its name.
type remoteError struct {
	msg string
	err error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.err }

// runOn runs cmd on host; an error names one of this package's scripts instead of quoting it.
func runOn(ctx context.Context, host *node.Host, cmd node.Command) (*node.Result, error) {
	res, err := host.Run(ctx, cmd)
	if err == nil {
		return res, nil
	}
	argv := cmd.Argv()
	if len(argv) > 2 && argv[0] == "sh" && argv[1] == "-c" {
		if name, ok := scriptNames[argv[2]]; ok {
			return res, &remoteError{msg: strings.ReplaceAll(err.Error(), cmd.String(), "("+name+")"), err: err}
		}
	}
	return res, err
}
