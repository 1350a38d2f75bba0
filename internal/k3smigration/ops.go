package k3smigration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/node"
)

// copy runs rsync from live to dest. While k3s runs, files vanishing mid-copy are expected: rsync
// exits 24, or 23 when a file went between its listing and the read of its ACLs or attributes
// (kine's state.db-wal and -shm do so at a checkpoint); the final copy, with k3s stopped, catches up.
func (m *move) copy(ctx context.Context, running bool) error {
	mode := "final"
	if running {
		mode = "running"
	}
	res, err := runScript(ctx, m.host, scriptCopy, m.live, m.dest, MarkerName, mode)
	var exitErr *node.ExitError
	if errors.As(err, &exitErr) {
		switch {
		case (exitErr.ExitCode == 24 || exitErr.ExitCode == 23 && onlyVanished(exitErr.Stderr)) && running:
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

// onlyVanished reports whether every error rsync reported in stderr is about a file that no
// longer exists ("file has vanished", or a call that failed with ENOENT), so an exit status 23
// (some files not transferred) says only that files vanished.
func onlyVanished(stderr string) bool {
	seen := false
	for _, line := range strings.Split(stderr, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "rsync error: some files/attrs were not transferred"):
		case strings.HasPrefix(line, "file has vanished: "),
			strings.HasPrefix(line, "rsync: ") && strings.HasSuffix(line, "No such file or directory (2)"):
			seen = true
		default:
			return false
		}
	}
	return seen
}

// stop stops k3s and everything that keeps files below its data dir open: the unit, then
// k3s-killall.sh (containers; its failure fails the stop), then containerd shims still holding
// the directory (with their children and process groups). It fails, naming them, when other
// processes still hold it, or when filesystems preflight did not carry are mounted below it. dirs are every path the data dir is seen at: its real path, and the
// source path k3s opens it by (a bind mount shows there, not at the real path). Each round trip
// does as much as it can: k3s is down meanwhile.
func (m *move) stop(ctx context.Context, dirs ...string) error {
	dirs = dedupe(dirs)
	dir := dirs[0]
	stopCtx, cancel := context.WithTimeout(ctx, m.spec.StopTimeout)
	defer cancel()
	res, err := runScript(stopCtx, m.host, scriptStop, append([]string{m.service}, dirs...)...)
	if err != nil {
		return fmt.Errorf("stopping %s: %w", m.service, err)
	}
	look := parseLook(res.Stdout, dirs)
	if rc := first(look.kv, "killall_failed"); rc != "" {
		return fmt.Errorf("k3s-killall.sh failed (exit status %s) after %s was stopped: %s", rc, m.service, strings.Join(look.kv["killall_output"], " / "))
	}
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
			return fmt.Errorf("processes other than containerd shims still use %s: %s; stop them and try again", dir, look.procs.others().describe())
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
		if res, err = runScript(stopCtx, m.host, scriptKill, append(args, dirs...)...); err != nil {
			return fmt.Errorf("stopping containerd shims: %w", err)
		}
		look = parseLook(res.Stdout, dirs)
	}

	// The migration never unmounts what it did not mount: a filesystem mounted below the data
	// dir now that preflight did not see (or carry) fails the stop, and the rollback starts k3s
	// again on the original directory.
	if extra := m.uncarried(look.mounts, dirs); len(extra) > 0 {
		return fmt.Errorf("filesystems are mounted below %s that preflight did not see: %s; the migration does not unmount what it did not mount", dir, strings.Join(extra, ", "))
	}
	if state := first(look.kv, "state"); state == "active" {
		return fmt.Errorf("%s is active again after it was stopped (restarted by something else?)", m.service)
	}
	return nil
}

// look is what the stop, kill and preflight scripts report.
type look struct {
	kv     map[string][]string
	procs  processes
	mounts []string
	// table is the node's mount table (/proc/self/mountinfo).
	table []byte
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
	l.table = table
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

// fixupArgs are the fixup script's arguments: in dir, make what names any of the paths from
// (each once, to itself left out) name to.
func fixupArgs(dir, to string, from ...string) []string {
	args := []string{dir, to}
	for _, f := range dedupe(from) {
		if f != to {
			args = append(args, f)
		}
	}
	return args
}

// verify compares the copy to with from: nothing left for rsync to change, the same counts and
// bytes, and the same checksums of the datastore, token and credentials.
func (m *move) verify(ctx context.Context, from, to string) error {
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
		diff, diffErr = runScript(ctx, m.host, scriptDiff, from, to, MarkerName)
	}()
	go func() { defer wg.Done(); a, errA = m.manifest(ctx, from) }()
	go func() { defer wg.Done(); b, errB = m.manifest(ctx, to) }()
	wg.Wait()
	if diffErr != nil {
		return fmt.Errorf("comparing %s with %s: %w", from, to, diffErr)
	}
	if d := strings.TrimSpace(string(diff.Stdout)); d != "" {
		return fmt.Errorf("the copy differs from the original after the final copy:\n%s", firstLines(d, 20))
	}
	if err := errors.Join(errA, errB); err != nil {
		return err
	}
	if a.count != b.count {
		return fmt.Errorf("the copy differs from the original: %s has %s, %s has %s", from, a.count, to, b.count)
	}
	if len(a.sums) == 0 {
		return fmt.Errorf("found none of server/db, server/token or agent's keys in %s to checksum", from)
	}
	for f, sum := range a.sums {
		if b.sums[f] != sum {
			return fmt.Errorf("checksum of %s differs: %s in %s, %q in %s", f, sum, from, b.sums[f], to)
		}
	}
	if len(b.sums) != len(a.sums) {
		return fmt.Errorf("the copy holds %d checksummed files, the original %d", len(b.sums), len(a.sums))
	}
	if err := m.checkDatastore(ctx, to); err != nil {
		return err
	}
	m.result.Entries = a.entries
	m.result.FilesCopied = a.files
	tflog.Info(ctx, "copy verified", map[string]any{"counts": a.count, "checksummed_files": len(a.sums)})
	return nil
}

// checkDatastore checks the sqlite datastore in dir (k3s stopped) as a database, with the node's
// sqlite3: equal bytes only prove the copy is what the original was when it was read, and a copy
// read while a writer still had the database open can be a broken database with equal bytes. A
// node without sqlite3 gets a warning (the bytes were still compared); embedded etcd's member
// data is compared byte for byte only.
func (m *move) checkDatastore(ctx context.Context, dir string) error {
	res, err := runScript(ctx, m.host, scriptCheckDatastore, dir)
	if err != nil {
		return fmt.Errorf("checking the datastore in %s: %w", dir, err)
	}
	warning, err := datastoreVerdict(res.Stdout, dir)
	if warning != "" && !slices.Contains(m.result.Warnings, warning) {
		m.result.Warnings = append(m.result.Warnings, warning)
	}
	tflog.Debug(ctx, "datastore checked", map[string]any{"dir": dir, "output": string(res.Stdout)})
	return err
}

// datastoreVerdict reads check_datastore's output for dir: an error when the database is broken
// (or the output unexpected), a warning when it could not be checked.
func datastoreVerdict(out []byte, dir string) (warning string, err error) {
	kv := parseKV(out)
	switch first(kv, "datastore") {
	case "ok", "none":
		return "", nil
	case "unchecked":
		return fmt.Sprintf("The node has no sqlite3: the datastore copied to %s was compared byte for byte with the original but not checked as a database.", dir), nil
	case "corrupt":
		return "", fmt.Errorf("the datastore in %s fails sqlite's integrity check (did a process still write it while it was copied?): %s", dir, strings.Join(kv["problem"], " / "))
	default:
		return "", fmt.Errorf("checking the datastore in %s: unexpected output %q", dir, firstLines(string(out), 5))
	}
}

type manifest struct {
	count          string
	entries, files int64
	sums           map[string]string
}

func (m *move) manifest(ctx context.Context, dir string) (manifest, error) {
	res, err := runScript(ctx, m.host, scriptManifest, dir, MarkerName)
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
	res, err := runScript(ctx, host, scriptState, spec.Source, spec.Target)
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

// uncarried returns the mount points that are below one of dirs but not one of the carried
// filesystems (or below one).
func (m *move) uncarried(mounts, dirs []string) []string {
	var out []string
	for _, mp := range mounts {
		carried := false
		for _, d := range dirs {
			for _, rel := range m.carry {
				if mp == d+"/"+rel || strings.HasPrefix(mp, d+"/"+rel+"/") {
					carried = true
				}
			}
		}
		if !carried {
			out = append(out, mp)
		}
	}
	return out
}
