package k3smigration_test

// Tests of the cases a real k3s node has that lost data before (issue 11, B): each fails without
// its fix. They run on the stand-in node (standin_test.go).

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/k3smigration"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/node"
)

// expectRefused checks that a migration was refused at step (before k3s was stopped, so nothing
// needed undoing), with an error that says want, and that k3s still runs on the original.
func expectRefused(t *testing.T, s *standin, err error, step k3smigration.Step, want ...string) {
	t.Helper()
	var se *k3smigration.StepError
	if !errors.As(err, &se) {
		t.Fatalf("want a StepError at %q, got %v", step, err)
	}
	t.Logf("error as the user sees it:\n%v", err)
	if se.Step != step || se.Stopped {
		t.Fatalf("want step %q with k3s never stopped, got step %q stopped=%t", step, se.Step, se.Stopped)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the error does not say %q", w)
		}
	}
	if got := s.isActive(); got != "active" {
		t.Errorf("k3s is %q, want active", got)
	}
	if got := s.dataDirInUse("k3s"); got != s.Source {
		t.Errorf("k3s runs on %q, want the original %s", got, s.Source)
	}
}

// failBeforeStop makes the migration fail just before the stop: the first copy stays in the
// target, unfinished, with its marker.
func failBeforeStop(_ context.Context, step k3smigration.Step) error {
	if step == k3smigration.StepStop {
		return errors.New("test: failing before the stop")
	}
	return nil
}

// A user's disk mounted below the data dir (local-path volumes at storage/) is refused by name,
// left mounted, and its data left as it was.
func TestMigrate_mountBelowSourceRefused(t *testing.T) {
	t.Parallel() // each stand-in is a node of its own (its directory, sshd, mounts and processes)
	s := newStandin(t, standinOptions{})
	storage := filepath.Join(s.Source, "storage")
	s.mountDisk(storage, 4)
	mustMkdir(t, filepath.Join(storage, "pvc-1"))
	mustWrite(t, filepath.Join(storage, "pvc-1/data"), "volume data", 0o644)
	_, err := k3smigration.Migrate(context.Background(), s.Host, s.spec(filepath.Join(s.Root, "mnt/nvme/k3s")), k3smigration.Hooks{})
	expectRefused(t, s, err, k3smigration.StepPreflight, "filesystems are mounted below", storage, "carry_mounts")
	if !isMountPoint(storage) {
		t.Errorf("%s was unmounted", storage)
	}
	if b, err := os.ReadFile(filepath.Join(storage, "pvc-1/data")); err != nil || string(b) != "volume data" {
		t.Errorf("volume data: %q %v", b, err)
	}
}

// With carry_mounts the disk moves along as a mount: bind-mounted at the same place below the
// target, its data not copied, the original mount left alone; bind_mount cannot carry.
func TestMigrate_carryMounts(t *testing.T) {
	t.Parallel() // each stand-in is a node of its own (its directory, sshd, mounts and processes)
	s := newStandin(t, standinOptions{})
	storage := filepath.Join(s.Source, "storage")
	s.mountDisk(storage, 4)
	mustMkdir(t, filepath.Join(storage, "pvc-1"))
	mustWrite(t, filepath.Join(storage, "pvc-1/data"), "volume data", 0o644)
	target := filepath.Join(s.Root, "mnt/nvme/k3s")
	spec := s.spec(target)
	spec.CarryMounts = true

	bind := spec
	bind.Method = k3smigration.MethodBindMount
	_, err := k3smigration.Migrate(context.Background(), s.Host, bind, k3smigration.Hooks{})
	expectRefused(t, s, err, k3smigration.StepPreflight, `carry_mounts needs switch_method = "symlink"`)

	res, err := k3smigration.Migrate(context.Background(), s.Host, spec, k3smigration.Hooks{})
	if err != nil {
		t.Fatalf("migrate: %v\n%s", err, s.serviceLog())
	}
	if len(res.CarriedMounts) != 1 || res.CarriedMounts[0] != "storage" {
		t.Errorf("carried mounts: %v", res.CarriedMounts)
	}
	if got := s.dataDirInUse("k3s"); got != target {
		t.Errorf("k3s runs on %q", got)
	}
	if !isMountPoint(filepath.Join(target, "storage")) {
		t.Fatalf("the disk is not mounted below the target")
	}
	if b, err := os.ReadFile(filepath.Join(target, "storage/pvc-1/data")); err != nil || string(b) != "volume data" {
		t.Errorf("volume data below the target: %q %v", b, err)
	}
	if !isMountPoint(filepath.Join(res.BackupPath, "storage")) {
		t.Errorf("the original mount (now below the backup %s) was taken away", res.BackupPath)
	}
	// The same filesystem, not a copy: a write through the target shows at the original mount.
	mustWrite(t, filepath.Join(target, "storage/pvc-1/new"), "written on the target", 0o644)
	if b, err := os.ReadFile(filepath.Join(res.BackupPath, "storage/pvc-1/new")); err != nil || string(b) != "written on the target" {
		t.Errorf("the carried mount is not the same filesystem: %q %v", b, err)
	}
}

// Memory-backed targets are refused: a reboot would lose the cluster.
func TestMigrate_volatileTargetRefused(t *testing.T) {
	t.Parallel() // each stand-in is a node of its own (its directory, sshd, mounts and processes)
	s := newStandin(t, standinOptions{})
	ram := filepath.Join(s.Root, "mnt/ram")
	mustMkdir(t, ram)
	run(t, "mount", "-t", "tmpfs", "-o", "size=64m", "ramdisk", ram)
	_, err := k3smigration.Migrate(context.Background(), s.Host, s.spec(filepath.Join(ram, "k3s")), k3smigration.Hooks{})
	expectRefused(t, s, err, k3smigration.StepPreflight, "tmpfs", "would not survive a reboot")
}

// After a migration was reverted by hand (the original put back and k3s started on it), the
// target holds what k3s wrote there after the switch: a new migration must not write the stale
// original over it.
func TestMigrate_finishedTargetNeverOverwritten(t *testing.T) {
	t.Parallel() // each stand-in is a node of its own (its directory, sshd, mounts and processes)
	s := newStandin(t, standinOptions{})
	target := filepath.Join(s.Root, "mnt/nvme/k3s")
	res, err := k3smigration.Migrate(context.Background(), s.Host, s.spec(target), k3smigration.Hooks{})
	if err != nil {
		t.Fatalf("migrate: %v", err)
	}
	s.systemctl("stop", "k3s")
	rowsOnTarget := dbRows(t, target)
	must(t, os.Remove(s.Source))
	must(t, os.Rename(res.BackupPath, s.Source))
	s.systemctl("start", "k3s")
	_, err = k3smigration.Migrate(context.Background(), s.Host, s.spec(target), k3smigration.Hooks{})
	expectRefused(t, s, err, k3smigration.StepPreflight, "holds a finished migration", "k3s ran on it")
	if n := dbRows(t, target); n != rowsOnTarget {
		t.Errorf("the target's datastore changed: %d rows, had %d", n, rowsOnTarget)
	}
}

// switch_method = "config" with a source that is a mount point of its own: the source stays where
// it is, so after lost state a new migration finds it again; it must not copy it over the
// target k3s now runs on.
func TestMigrate_configMountPointSourceNotCopiedAgain(t *testing.T) {
	t.Parallel() // each stand-in is a node of its own (its directory, sshd, mounts and processes)
	s := newStandin(t, standinOptions{SourceDiskMiB: 32})
	must(t, os.RemoveAll(filepath.Join(s.Source, "storage"))) // config cannot move local-path volumes (see TestMigrate_configRefusals)
	target := filepath.Join(s.Root, "mnt/nvme/k3s")
	spec := s.spec(target)
	spec.Method = k3smigration.MethodConfig
	if _, err := k3smigration.Migrate(context.Background(), s.Host, spec, k3smigration.Hooks{}); err != nil {
		t.Fatalf("migrate: %v\n%s", err, s.serviceLog())
	}
	if got := s.dataDirInUse("k3s"); got != target {
		t.Fatalf("k3s runs on %q", got)
	}
	rows := dbRows(t, target)
	marker, err := os.ReadFile(filepath.Join(target, k3smigration.MarkerName))
	if err != nil || !strings.HasSuffix(string(marker), "\ncomplete\n") {
		t.Errorf("the copy is not marked complete: %q %v", marker, err)
	}
	_, err = k3smigration.Migrate(context.Background(), s.Host, spec, k3smigration.Hooks{})
	var se *k3smigration.StepError
	if !errors.As(err, &se) || se.Step != k3smigration.StepPreflight || se.Stopped {
		t.Fatalf("the second migration was not refused at preflight: %v", err)
	}
	t.Logf("second migration: %v", err)
	if got := s.dataDirInUse("k3s"); got != target || s.isActive() != "active" {
		t.Errorf("k3s is %q on %q after the refused migration", s.isActive(), got)
	}
	if n := dbRows(t, target); n < rows {
		t.Errorf("the target lost rows: %d < %d", n, rows)
	}
}

// A target that a process holds (a k3s running on an unfinished copy, here a shell with its
// working directory there) is refused.
func TestMigrate_targetInUseRefused(t *testing.T) {
	t.Parallel() // each stand-in is a node of its own (its directory, sshd, mounts and processes)
	s := newStandin(t, standinOptions{})
	target := filepath.Join(s.Root, "mnt/nvme/k3s")
	_, err := k3smigration.Migrate(context.Background(), s.Host, s.spec(target), k3smigration.Hooks{Before: failBeforeStop})
	expectRefused(t, s, err, k3smigration.StepStop)
	holder := exec.Command("sleep", "300")
	holder.Dir = target
	must(t, holder.Start())
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	_, err = k3smigration.Migrate(context.Background(), s.Host, s.spec(target), k3smigration.Hooks{})
	expectRefused(t, s, err, k3smigration.StepPreflight, "is in use by", "sleep")
}

// Resuming into a nearly full target counts the unfinished copy already there; a source reached
// through a linked parent directory resumes too (the marker holds the real path).
func TestMigrate_resume(t *testing.T) {
	t.Parallel() // each stand-in is a node of its own (its directory, sshd, mounts and processes)
	t.Run("nearly full target", func(t *testing.T) {
		s := newStandin(t, standinOptions{FillMB: 2})
		target := filepath.Join(s.Root, "mnt/nvme/k3s")
		s.mountDisk(filepath.Dir(target), 6)
		spec := s.spec(target)
		spec.MarginBytes = 0
		_, err := k3smigration.Migrate(context.Background(), s.Host, spec, k3smigration.Hooks{Before: failBeforeStop})
		expectRefused(t, s, err, k3smigration.StepStop)
		var st syscall.Statfs_t
		must(t, syscall.Statfs(target, &st))
		t.Logf("free after the first copy: %d KiB", st.Bavail*uint64(st.Bsize)>>10)
		rerun(t, s, target)
	})
	t.Run("source through a linked parent", func(t *testing.T) {
		s := newStandin(t, standinOptions{})
		alias := filepath.Join(s.Root, "rancher-link")
		must(t, os.Symlink(filepath.Dir(s.Source), alias))
		target := filepath.Join(s.Root, "mnt/nvme/k3s")
		spec := s.spec(target)
		spec.Source = filepath.Join(alias, "k3s")
		_, err := k3smigration.Migrate(context.Background(), s.Host, spec, k3smigration.Hooks{Before: failBeforeStop})
		expectRefused(t, s, err, k3smigration.StepStop)
		if _, err := k3smigration.Migrate(context.Background(), s.Host, spec, k3smigration.Hooks{}); err != nil {
			t.Fatalf("resume through %s: %v", alias, err)
		}
		if got := s.dataDirInUse("k3s"); got != target {
			t.Errorf("k3s runs on %q", got)
		}
	})
}

// k3s-killall.sh's failure fails the stop (and is rolled back); an old killall, which force-unmounts
// and removes every mount whose path starts with the default data dir, makes a target such as
// <data dir>-nvme refused before it could destroy it.
func TestMigrate_killall(t *testing.T) {
	t.Parallel() // each stand-in is a node of its own (its directory, sshd, mounts and processes)
	t.Run("fails", func(t *testing.T) {
		s := newStandin(t, standinOptions{Killall: "fail"})
		before := snapshot(t, s.Source)
		rows := dbRows(t, s.Source)
		_, err := k3smigration.Migrate(context.Background(), s.Host, s.spec(filepath.Join(s.Root, "mnt/nvme/k3s")), k3smigration.Hooks{})
		expectRolledBack(t, err, k3smigration.StepStop, true, "k3s-killall.sh failed (exit status 1)")
		checkIntact(t, s, before, rows)
	})
	t.Run("old form", func(t *testing.T) {
		s := newStandin(t, standinOptions{Killall: "old"})
		target := s.Source + "-nvme"
		s.mountDisk(target, 16)
		mustWrite(t, filepath.Join(target, "keep"), "on the nvme disk", 0o644)
		_, err := k3smigration.Migrate(context.Background(), s.Host, s.spec(filepath.Join(target, "k3s")), k3smigration.Hooks{})
		expectRefused(t, s, err, k3smigration.StepPreflight, "k3s-killall.sh", "before mid-2024", "rm -rf")
		if !isMountPoint(target) {
			t.Errorf("%s was unmounted", target)
		}
		if b, err := os.ReadFile(filepath.Join(target, "keep")); err != nil || string(b) != "on the nvme disk" {
			t.Errorf("the disk's data: %q %v", b, err)
		}
	})
}

// k3s's own configuration decides which directory it uses: a drop-in or K3S_DATA_DIR naming
// another directory than source is refused, and so is switch_method = "config" when a drop-in
// would win over config_file, or when local-path volumes would be left pointing at the old path.
func TestMigrate_configRefusals(t *testing.T) {
	t.Parallel() // each stand-in is a node of its own (its directory, sshd, mounts and processes)
	s := newStandin(t, standinOptions{})
	target := filepath.Join(s.Root, "mnt/nvme/k3s")
	dropin := s.Config + ".d/50-disk.yaml"
	mustMkdir(t, filepath.Dir(dropin))

	mustWrite(t, dropin, "data-dir: "+filepath.Join(s.Root, "elsewhere")+"\n", 0o600)
	_, err := k3smigration.Migrate(context.Background(), s.Host, s.spec(target), k3smigration.Hooks{})
	expectRefused(t, s, err, k3smigration.StepPreflight, "uses the data dir "+filepath.Join(s.Root, "elsewhere"), dropin)

	mustWrite(t, dropin, "data-dir: "+s.Source+"\n", 0o600)
	spec := s.spec(target)
	spec.Method = k3smigration.MethodConfig
	_, err = k3smigration.Migrate(context.Background(), s.Host, spec, k3smigration.Hooks{})
	expectRefused(t, s, err, k3smigration.StepPreflight, "data-dir is set in "+dropin, "config_file")

	must(t, os.Remove(dropin))
	_, err = k3smigration.Migrate(context.Background(), s.Host, spec, k3smigration.Hooks{})
	expectRefused(t, s, err, k3smigration.StepPreflight, "local-path volumes", `switch_method = "symlink"`)

	mustWrite(t, s.EnvFile, "K3S_DATA_DIR="+filepath.Join(s.Root, "other")+"\n", 0o600)
	_, err = k3smigration.Migrate(context.Background(), s.Host, s.spec(target), k3smigration.Hooks{})
	expectRefused(t, s, err, k3smigration.StepPreflight, "K3S_DATA_DIR in "+s.EnvFile)
}

// Every node-side script refuses an argument holding a control character (a newline would forge
// the key=value lines they print), before doing anything.
func TestScripts_refuseControlCharacters(t *testing.T) {
	t.Parallel() // each stand-in is a node of its own (its directory, sshd, mounts and processes)
	s := newStandin(t, standinOptions{})
	for _, name := range k3smigration.ScriptNames() {
		// Every argument names a place below the stand-in's root, so that even a script that took
		// them would change nothing outside it.
		_, err := k3smigration.RunScript(context.Background(), s.Host, name, filepath.Join(s.Root, "no-such-dir"), filepath.Join(s.Root, "x\ntarget=empty"), filepath.Join(s.Root, "m"))
		var ee *node.ExitError
		if !errors.As(err, &ee) || ee.ExitCode != 64 || !strings.Contains(err.Error(), "control character") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if got := s.isActive(); got != "active" {
		t.Errorf("k3s is %q", got)
	}
}

// sshLossCase is a moment at which SSH to the node is lost for good during a migration: before
// step (after the stop, or once k3s runs on the target and, started, has written there).
type sshLossCase struct {
	name    string
	step    k3smigration.Step
	started bool
}

var sshLossCases = []sshLossCase{
	{name: "lost after the stop", step: k3smigration.StepFinalCopy},
	{name: "lost after k3s started on the target", step: k3smigration.StepHealthy, started: true},
}

// cutAt is a Before hook that runs cut just before the case's step (after a second of k3s writing
// on the target when started).
func (c sshLossCase) cutAt(cut func()) func(context.Context, k3smigration.Step) error {
	return func(_ context.Context, step k3smigration.Step) error {
		if step == c.step {
			if c.started {
				time.Sleep(time.Second) // let k3s write on the target
			}
			cut()
		}
		return nil
	}
}

// checkRollbackUnreachable checks that the migration failed with a rollback that could not reach
// the node, and that its error says which directory holds the newest data and never that nothing
// was lost.
func (c sshLossCase) checkRollbackUnreachable(t *testing.T, res k3smigration.Result, err error, source, target string) {
	t.Helper()
	var se *k3smigration.StepError
	if !errors.As(err, &se) || se.RollbackErr == nil {
		t.Fatalf("want a failed migration whose rollback could not reach the node, got %+v %v", res, err)
	}
	t.Logf("error as the user sees it:\n%v", err)
	newest := "so the original " + source
	if c.started {
		newest = "so " + target + " HOLDS THE NEWEST DATA"
	}
	if msg := strings.Join(strings.Fields(err.Error()), " "); !strings.Contains(msg, newest) || strings.Contains(msg, "nothing was lost") {
		t.Errorf("the error does not say %q, or says that nothing was lost", newest)
	}
}

// SSH lost for good (sshd killed, as a node unreachable for good or a provider killed would leave
// it): the node guard, armed before the stop as a timer, puts k3s back on the original by
// itself. After k3s was started on the target, it copies what k3s wrote there back first. The
// timer is the systemd-run stand-in's (a real systemd does not run here); the guard script is
// the real one.
func TestMigrate_nodeGuard(t *testing.T) {
	t.Parallel() // each stand-in is a node of its own (its directory, sshd, mounts and processes)
	for _, tc := range sshLossCases {
		t.Run(tc.name, func(t *testing.T) {
			s := newStandin(t, standinOptions{Systemd: true})
			target := filepath.Join(s.Root, "mnt/nvme/k3s")
			before := snapshot(t, s.Source)
			rows := dbRows(t, s.Source)
			spec := s.spec(target)
			// The guard fires GuardDelay after it is armed (before the stop): long enough for the
			// steps up to the switch on a loaded 2-core machine (20 s was not, in CI).
			spec.GuardDelay, spec.RollbackTimeout = 45*time.Second, 10*time.Second
			hooks := k3smigration.Hooks{Before: tc.cutAt(func() {
				s.SSHD.DropConnections(t)
				must(t, syscall.Kill(s.SSHD.PID(), syscall.SIGKILL))
			})}
			res, err := k3smigration.Migrate(context.Background(), s.Host, spec, hooks)
			tc.checkRollbackUnreachable(t, res, err, s.Source, target)
			deadline := time.Now().Add(150 * time.Second)
			for s.isActive() != "active" || s.dataDirInUse("k3s") != s.Source {
				if time.Now().After(deadline) {
					guardLog, _ := os.ReadFile(filepath.Join(s.State, "guard.log"))
					t.Fatalf("the guard did not bring k3s back on %s: %q on %q\nguard log:\n%s", s.Source, s.isActive(), s.dataDirInUse("k3s"), guardLog)
				}
				time.Sleep(200 * time.Millisecond)
			}
			guardLog, _ := os.ReadFile(filepath.Join(s.State, "guard.log"))
			t.Logf("guard log:\n%s", guardLog)
			checkIntact(t, s, before, rows)
			if tc.started {
				id, value := lastRow(t, target)
				if got := rowValue(t, s.Source, id); got != value {
					t.Errorf("the last write k3s made on the target (row %d) is not in the original: %q != %q", id, got, value)
				}
			}
		})
	}
}
