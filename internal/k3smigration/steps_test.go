package k3smigration_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/testenv"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/k3smigration"
)

// These tests run the migration machinery against the stand-in k3s node (real sshd, rsync, files,
// mounts and processes on this machine), without Terraform or Kubernetes: the node-Ready check is
// left out here and covered by the acceptance tests.

func (s *standin) spec(target string) k3smigration.Spec {
	return k3smigration.Spec{Source: s.Source, Target: target, KeepBackup: true, ConfigFile: s.Config, FstabFile: s.Fstab, GuardDir: filepath.Join(s.Root, "run/clusterstorage"),
		StopTimeout: 2 * time.Minute, HealthTimeout: 20 * time.Second, RollbackTimeout: time.Minute}
}

// checkMigrated checks that the service runs on target, that target holds the data, and that the
// original (at backup) is what it was before.
func checkMigrated(t *testing.T, s *standin, target, backup string, before map[string]fileState, rowsBefore int) {
	t.Helper()
	if got := s.isActive(); got != "active" {
		t.Errorf("k3s is %q after the migration\n%s", got, s.serviceLog())
	}
	if got := s.dataDirInUse("k3s"); got != target {
		t.Errorf("k3s runs on %q, want %q", got, target)
	}
	if diffs := compareSnapshots(before, snapshot(t, target)); len(diffs) > 0 {
		t.Errorf("target differs from the original:\n%s", strings.Join(diffs, "\n"))
	}
	if backup != "" {
		if diffs := compareSnapshots(before, snapshot(t, backup)); len(diffs) > 0 {
			t.Errorf("the original (backup %s) changed:\n%s", backup, strings.Join(diffs, "\n"))
		}
	}
	if rows := dbRows(t, target); rows < rowsBefore {
		t.Errorf("datastore in target has %d rows, the original had %d before", rows, rowsBefore)
	}
}

// checkIntact checks that the service runs on the original directory and that it is unchanged.
func checkIntact(t *testing.T, s *standin, before map[string]fileState, rowsBefore int) {
	t.Helper()
	fi, err := os.Lstat(s.Source)
	if err != nil || !fi.IsDir() || isMountPoint(s.Source) {
		t.Fatalf("source is not a plain directory any more: %v %v (mount point: %t)", fi, err, isMountPoint(s.Source))
	}
	if got := s.isActive(); got != "active" {
		t.Errorf("k3s is %q, want active\n%s", got, s.serviceLog())
	}
	if got := s.dataDirInUse("k3s"); got != s.Source {
		t.Errorf("k3s runs on %q, want the original %q", got, s.Source)
	}
	if diffs := compareSnapshots(before, snapshot(t, s.Source)); len(diffs) > 0 {
		t.Errorf("the original changed:\n%s", strings.Join(diffs, "\n"))
	}
	if rows := dbRows(t, s.Source); rows < rowsBefore {
		t.Errorf("datastore has %d rows, had %d before", rows, rowsBefore)
	}
}

func TestMigrate_symlink(t *testing.T) {
	t.Parallel() // each stand-in is a node of its own (its directory, sshd, mounts and processes)
	s := newStandin(t, standinOptions{})
	ctx := context.Background()
	target := filepath.Join(s.Root, "mnt/nvme/k3s")
	// A sparse volume image (64 MiB, one 4 KiB block written): the copy must stay sparse, or a
	// volume's holes could fill the target.
	sparse := "storage/pvc-3f1e2d3c-0000-4000-8000-000000000001_default_data/disk.img"
	f, err := os.Create(filepath.Join(s.Source, sparse))
	must(t, err)
	_, err = f.WriteAt([]byte("data in the middle"), 32<<20)
	must(t, errors.Join(err, f.Truncate(64<<20), f.Close()))
	before := snapshot(t, s.Source)
	rows := dbRows(t, s.Source)

	res, err := k3smigration.Migrate(ctx, s.Host, s.spec(target), k3smigration.Hooks{})
	if err != nil {
		t.Fatalf("migrate: %v\nservice log:\n%s", err, s.serviceLog())
	}
	var sparseStat syscall.Stat_t
	must(t, syscall.Stat(filepath.Join(target, sparse), &sparseStat))
	if allocated := sparseStat.Blocks * 512; allocated > 1<<20 {
		t.Errorf("the sparse file takes %d bytes on the target: it was not copied sparse", allocated)
	}
	link, err := os.Readlink(s.Source)
	if err != nil || link != target {
		t.Fatalf("source is not a link to the target: %q %v", link, err)
	}
	checkMigrated(t, s, target, res.BackupPath, before, rows)
	if res.Service != "k3s" || res.FilesCopied == 0 || res.BytesCopied == 0 || res.Downtime <= 0 || res.SourceFS.Device == "" {
		t.Errorf("unexpected result %+v", res)
	}
	t.Logf("result: %+v", res)

	st, err := k3smigration.ReadState(ctx, s.Host, s.spec(target))
	if err != nil || !st.InUse {
		t.Errorf("ReadState after the migration: %+v %v", st, err)
	}

	// A second migration of the same source is refused: it is a link now.
	_, err = k3smigration.Migrate(ctx, s.Host, s.spec(filepath.Join(s.Root, "other")), k3smigration.Hooks{})
	var se *k3smigration.StepError
	if !errors.As(err, &se) || se.Step != k3smigration.StepPreflight || !strings.Contains(err.Error(), "looks migrated already") {
		t.Errorf("second migration: %v", err)
	}

	// Restore moves it back.
	rres, err := k3smigration.Restore(ctx, s.Host, s.spec(target), k3smigration.Hooks{})
	if err != nil {
		t.Fatalf("restore: %v\n%s", err, s.serviceLog())
	}
	t.Logf("restore: %+v", rres)
	checkIntact(t, s, before, rows)
	if _, err := os.Stat(filepath.Join(s.Source, k3smigration.MarkerName)); !os.IsNotExist(err) {
		t.Errorf("the marker is left in the restored directory: %v", err)
	}
	if st, err := k3smigration.ReadState(ctx, s.Host, s.spec(target)); err != nil || st.InUse {
		t.Errorf("ReadState after the restore: %+v %v", st, err)
	}
}

// onRsync calls f as soon as an rsync copying into target runs on this machine (the node).
func onRsync(t *testing.T, target string, f func()) {
	t.Helper()
	onProcess(func(cmdline string) bool {
		return strings.HasPrefix(cmdline, "rsync\x00") && strings.Contains(cmdline, target+"/")
	}, f)
}

// onProcess calls f as soon as a process whose command line (NUL-separated) matches runs on this
// machine; it gives up after two minutes.
func onProcess(match func(cmdline string) bool, f func()) {
	go func() {
		deadline := time.Now().Add(2 * time.Minute)
		for time.Now().Before(deadline) {
			entries, _ := os.ReadDir("/proc")
			for _, e := range entries {
				cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
				if err == nil && match(string(cmdline)) {
					f()
					return
				}
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
}

// rewrite gives every fill file below source new content (k3s is stopped when tests call it), so
// the final copy has work to do.
func rewrite(t *testing.T, s *standin) {
	t.Helper()
	dir := filepath.Join(s.Source, "agent/containerd/io.containerd.content.v1.content/blobs/sha256")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "fill") {
			_, _ = rand.Read(buf)
			mustWrite(t, filepath.Join(dir, e.Name()), string(buf), 0o644)
		}
	}
}

// expectRolledBack checks the error of a failed migration: the step, a rollback that worked (when
// k3s had been stopped), and the words the user reads.
func expectRolledBack(t *testing.T, err error, step k3smigration.Step, stopped bool, cause string) {
	t.Helper()
	var se *k3smigration.StepError
	if !errors.As(err, &se) {
		t.Fatalf("want a StepError, got %v", err)
	}
	t.Logf("error as the user sees it:\n%v", err)
	if se.Step != step || se.Stopped != stopped || se.RollbackErr != nil {
		t.Fatalf("want step %q stopped=%t and a rollback that worked, got step %q stopped=%t rollback %v", step, stopped, se.Step, se.Stopped, se.RollbackErr)
	}
	if !strings.Contains(err.Error(), cause) {
		t.Errorf("the error does not say %q", cause)
	}
	if !strings.Contains(err.Error(), "nothing was lost") {
		t.Errorf("the error does not say that nothing was lost")
	}
}

// rerun migrates again without faults and checks the result.
func rerun(t *testing.T, s *standin, target string) {
	t.Helper()
	before := snapshot(t, s.Source)
	rows := dbRows(t, s.Source)
	res, err := k3smigration.Migrate(context.Background(), s.Host, s.spec(target), k3smigration.Hooks{})
	if err != nil {
		t.Fatalf("rerun: %v\n%s", err, s.serviceLog())
	}
	checkMigrated(t, s, target, res.BackupPath, before, rows)
}

func TestMigrate_faults(t *testing.T) {
	t.Parallel() // each stand-in is a node of its own (its directory, sshd, mounts and processes)
	cases := []struct {
		name string
		fill int
		// fault returns hooks that make the migration fail into target, and the step and words
		// the error must name.
		fault   func(t *testing.T, s *standin, target string, cancel context.CancelFunc) k3smigration.Hooks
		step    k3smigration.Step
		stopped bool
		cause   string
		// smallMiB mounts a disk of this many MiB on target's parent.
		smallMiB int
		// rerunTarget is where the rerun goes ("" = the same target).
		rerunTarget string
		// fix undoes the fault before the rerun.
		fix func(s *standin)
		// after checks more once the failed migration is over.
		after func(t *testing.T, s *standin, target string)
	}{
		{
			name: "ssh connection cut during the first copy", fill: 40, stopped: false, step: k3smigration.StepCopy, cause: "first copy",
			fault: func(t *testing.T, s *standin, target string, _ context.CancelFunc) k3smigration.Hooks {
				return k3smigration.Hooks{Before: func(_ context.Context, step k3smigration.Step) error {
					if step == k3smigration.StepCopy {
						onRsync(t, target, func() { s.SSHD.DropConnections(t) })
					}
					return nil
				}}
			},
		},
		{
			name: "ssh connection cut during the final copy", fill: 40, stopped: true, step: k3smigration.StepFinalCopy, cause: "final copy",
			fault: func(t *testing.T, s *standin, target string, _ context.CancelFunc) k3smigration.Hooks {
				return k3smigration.Hooks{Before: func(_ context.Context, step k3smigration.Step) error {
					if step == k3smigration.StepFinalCopy {
						rewrite(t, s)
						onRsync(t, target, func() { s.SSHD.DropConnections(t) })
					}
					return nil
				}}
			},
		},
		{
			// The cut reaches the rollback too: its `systemctl start` is cut as well, and run again
			// on a new connection.
			name: "ssh connection cut during the final copy, and again while the rollback starts k3s", fill: 40, stopped: true, step: k3smigration.StepFinalCopy, cause: "final copy",
			fault: func(t *testing.T, s *standin, target string, _ context.CancelFunc) k3smigration.Hooks {
				var cutStart atomic.Bool
				t.Cleanup(func() {
					if !cutStart.Load() {
						t.Error("the rollback's systemctl start was never cut")
					}
				})
				startsK3s := func(cmdline string) bool { return strings.HasSuffix(cmdline, "/systemctl\x00start\x00k3s\x00") }
				return k3smigration.Hooks{Before: func(_ context.Context, step k3smigration.Step) error {
					if step == k3smigration.StepFinalCopy {
						rewrite(t, s)
						onRsync(t, target, func() {
							onProcess(startsK3s, func() { cutStart.Store(true); s.SSHD.DropConnections(t) })
							s.SSHD.DropConnections(t)
						})
					}
					return nil
				}}
			},
		},
		{
			name: "target filesystem too small", stopped: false, step: k3smigration.StepPreflight, cause: "not enough free space",
			smallMiB: 1, rerunTarget: "big/k3s",
			fault: func(*testing.T, *standin, string, context.CancelFunc) k3smigration.Hooks { return k3smigration.Hooks{} },
		},
		{
			name: "target filesystem fills up during the final copy", fill: 3, stopped: true, step: k3smigration.StepFinalCopy, cause: "No space left on device",
			smallMiB: 6, rerunTarget: "big/k3s",
			fault: func(t *testing.T, s *standin, _ string, _ context.CancelFunc) k3smigration.Hooks {
				return k3smigration.Hooks{Before: func(_ context.Context, step k3smigration.Step) error {
					if step == k3smigration.StepFinalCopy {
						// The data grew by 4 MiB since the preflight: more than the target has.
						for i := 0; i < 4; i++ {
							mustWrite(t, filepath.Join(s.Source, "storage", fmt.Sprintf("grown%d", i)), strings.Repeat("x", 1<<20), 0o644)
						}
					}
					return nil
				}}
			},
		},
		{
			name: "verification mismatch", stopped: true, step: k3smigration.StepVerify, cause: "differs",
			fault: func(t *testing.T, _ *standin, target string, _ context.CancelFunc) k3smigration.Hooks {
				return k3smigration.Hooks{Before: func(_ context.Context, step k3smigration.Step) error {
					if step == k3smigration.StepVerify {
						f, err := os.OpenFile(filepath.Join(target, "server/token"), os.O_APPEND|os.O_WRONLY, 0)
						must(t, err)
						_, err = f.WriteString("corrupted")
						must(t, errors.Join(err, f.Close()))
					}
					return nil
				}}
			},
		},
		{
			name: "service fails to start on the new directory", stopped: true, step: k3smigration.StepStart, cause: "systemctl start k3s",
			fault: func(_ *testing.T, s *standin, target string, _ context.CancelFunc) k3smigration.Hooks {
				s.failStartOn(target)
				return k3smigration.Hooks{}
			},
			fix: func(s *standin) { must(s.t, os.Remove(filepath.Join(s.State, "fail-start-on"))) },
		},
		{
			name: "node not healthy on the new directory", stopped: true, step: k3smigration.StepHealthy, cause: "copied back",
			// k3s wrote on the target while the health check waited: those writes are copied back,
			// not discarded (the row the target got last is in the original, with its value).
			after: func(t *testing.T, s *standin, target string) {
				id, value := lastRow(t, target)
				if got := rowValue(t, s.Source, id); got != value {
					t.Errorf("the last write k3s made on the target (row %d) is not in the original: %q != %q", id, got, value)
				}
			},
			fault: func(_ *testing.T, s *standin, target string, _ context.CancelFunc) k3smigration.Hooks {
				return k3smigration.Hooks{NodeReady: func(context.Context, time.Time) (bool, string, error) {
					if s.dataDirInUse("k3s") == target {
						return false, "stand-in: the kubelet never reports on the new directory", nil
					}
					return true, "", nil
				}}
			},
		},
		{
			name: "cancelled during the first copy", fill: 40, stopped: false, step: k3smigration.StepCopy, cause: "context canceled",
			fault: func(t *testing.T, _ *standin, target string, cancel context.CancelFunc) k3smigration.Hooks {
				return k3smigration.Hooks{Before: func(_ context.Context, step k3smigration.Step) error {
					if step == k3smigration.StepCopy {
						onRsync(t, target, cancel)
					}
					return nil
				}}
			},
		},
		{
			name: "cancelled during the final copy", fill: 40, stopped: true, step: k3smigration.StepFinalCopy, cause: "context canceled",
			fault: func(t *testing.T, s *standin, target string, cancel context.CancelFunc) k3smigration.Hooks {
				return k3smigration.Hooks{Before: func(_ context.Context, step k3smigration.Step) error {
					if step == k3smigration.StepFinalCopy {
						rewrite(t, s)
						onRsync(t, target, cancel)
					}
					return nil
				}}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newStandin(t, standinOptions{FillMB: tc.fill})
			target := filepath.Join(s.Root, "mnt/nvme/k3s")
			if tc.smallMiB > 0 {
				s.mountDisk(filepath.Dir(target), tc.smallMiB)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			hooks := tc.fault(t, s, target, cancel)
			spec := s.spec(target)
			spec.MarginBytes = 0

			var before map[string]fileState
			rows := dbRows(t, s.Source)
			stepBefore := hooks.Before
			hooks.Before = func(ctx context.Context, step k3smigration.Step) error {
				if stepBefore != nil {
					if err := stepBefore(ctx, step); err != nil {
						return err
					}
				}
				// The original as the failure finds it: right after the stop (k3s quiet), or before
				// the first copy when the failure comes earlier.
				if step == k3smigration.StepFinalCopy || (step == k3smigration.StepCopy && !tc.stopped) || (step == k3smigration.StepPreflight && before == nil) {
					before = snapshot(t, s.Source)
				}
				return nil
			}
			_, err := k3smigration.Migrate(ctx, s.Host, spec, hooks)
			expectRolledBack(t, err, tc.step, tc.stopped, tc.cause)
			checkIntact(t, s, before, rows)
			if tc.after != nil {
				tc.after(t, s, target)
			}
			if backups, _ := filepath.Glob(s.Source + ".pre-migration-*"); len(backups) != 0 {
				t.Errorf("a backup was left behind: %v", backups)
			}

			if tc.fix != nil {
				tc.fix(s)
			}
			rt := target
			if tc.rerunTarget != "" {
				rt = filepath.Join(s.Root, tc.rerunTarget)
			}
			rerun(t, s, rt)
		})
	}
}

func TestMigrate_methods(t *testing.T) {
	t.Parallel() // each stand-in is a node of its own (its directory, sshd, mounts and processes)
	cases := []struct {
		name   string
		opts   standinOptions
		change func(spec *k3smigration.Spec)
		check  func(t *testing.T, s *standin, target string)
		// fixedUp are the entries the switch rewrites in the copy (config: the paths k3s wrote).
		fixedUp []string
	}{
		{
			name:   "bind_mount",
			change: func(spec *k3smigration.Spec) { spec.Method = k3smigration.MethodBindMount },
			check: func(t *testing.T, s *standin, target string) {
				if !isMountPoint(s.Source) {
					t.Errorf("no bind mount on %s", s.Source)
				}
				fstab, _ := os.ReadFile(s.Fstab)
				if !strings.Contains(string(fstab), target+" "+s.Source+" none bind 0 0") {
					t.Errorf("fstab: %q", fstab)
				}
			},
		},
		{
			name:    "config",
			change:  func(spec *k3smigration.Spec) { spec.Method = k3smigration.MethodConfig },
			fixedUp: []string{"data/current", "agent/kubelet.kubeconfig"},
			check: func(t *testing.T, s *standin, target string) {
				cfg, _ := os.ReadFile(s.Config)
				if !strings.Contains(string(cfg), "data-dir: \""+target+"\"") || !strings.Contains(string(cfg), "write-kubeconfig-mode") {
					t.Errorf("config: %q", cfg)
				}
				// The absolute paths k3s wrote name the new path (the old one is renamed away).
				if link, err := os.Readlink(filepath.Join(target, "data/current")); err != nil || link != filepath.Join(target, "data", standinHash) {
					t.Errorf("data/current links to %q (%v), want %s", link, err, filepath.Join(target, "data", standinHash))
				}
				if kc, err := os.ReadFile(filepath.Join(target, "agent/kubelet.kubeconfig")); err != nil || !strings.Contains(string(kc), target+"/agent/client-kubelet.crt") ||
					strings.Contains(string(kc), s.Source+"/") {
					t.Errorf("kubeconfig: %q %v", kc, err)
				}
			},
		},
		{
			name:   "symlink without backup, k3s-agent, no k3s-killall.sh",
			opts:   standinOptions{Service: "k3s-agent", NoKillall: true},
			change: func(spec *k3smigration.Spec) { spec.KeepBackup = false },
			check: func(t *testing.T, s *standin, _ string) {
				if backups, _ := filepath.Glob(s.Source + ".pre-migration-*"); len(backups) != 0 {
					t.Errorf("backup kept: %v", backups)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newStandin(t, tc.opts)
			unit := tc.opts.Service
			if unit == "" {
				unit = "k3s"
			}
			mustWrite(t, s.Config, "# k3s settings\nwrite-kubeconfig-mode: \"0644\"\n", 0o600)
			ctx := context.Background()
			target := filepath.Join(s.Root, "mnt/nvme/k3s")
			spec := s.spec(target)
			tc.change(&spec)
			if spec.Method == k3smigration.MethodConfig {
				// config cannot move local-path volumes (TestMigrate_configRefusals): an agent without them.
				must(t, os.RemoveAll(filepath.Join(s.Source, "storage")))
			}
			before := snapshot(t, s.Source)
			res, err := k3smigration.Migrate(ctx, s.Host, spec, k3smigration.Hooks{})
			if err != nil {
				t.Fatalf("migrate: %v\n%s", err, s.serviceLog())
			}
			if got := s.dataDirInUse(unit); !sameFile(got, target) || res.Service != unit {
				t.Fatalf("%s runs on %q (result %+v)", unit, got, res)
			}
			after := snapshot(t, target)
			for _, p := range tc.fixedUp {
				after[p] = before[p] // checked by tc.check
			}
			if diffs := compareSnapshots(before, after); len(diffs) > 0 {
				t.Errorf("target differs:\n%s", strings.Join(diffs, "\n"))
			}
			tc.check(t, s, target)
			if st, err := k3smigration.ReadState(ctx, s.Host, spec); err != nil || !st.InUse {
				t.Errorf("ReadState: %+v %v", st, err)
			}

			if _, err := k3smigration.Restore(ctx, s.Host, spec, k3smigration.Hooks{}); err != nil {
				t.Fatalf("restore: %v\n%s", err, s.serviceLog())
			}
			if got := s.dataDirInUse(unit); got != s.Source {
				t.Errorf("%s runs on %q after the restore", unit, got)
			}
			if diffs := compareSnapshots(before, snapshot(t, s.Source)); len(diffs) > 0 {
				t.Errorf("restored directory differs:\n%s", strings.Join(diffs, "\n"))
			}
			if st, err := k3smigration.ReadState(ctx, s.Host, spec); err != nil || st.InUse {
				t.Errorf("ReadState after the restore: %+v %v", st, err)
			}
			if _, err := os.Stat(target); !spec.KeepBackup && !os.IsNotExist(err) {
				t.Errorf("keep_backup = false, but the restore left the copy %s: %v", target, err)
			}
			fstab, _ := os.ReadFile(s.Fstab)
			if strings.Contains(string(fstab), "bind") || isMountPoint(s.Source) {
				t.Errorf("bind mount left behind: fstab %q, mount point %t", fstab, isMountPoint(s.Source))
			}
			if cfg, _ := os.ReadFile(s.Config); strings.Contains(string(cfg), target) {
				t.Errorf("config still names the target: %q", cfg)
			}
		})
	}
}

func TestMigrate_measureWrite(t *testing.T) {
	t.Parallel() // each stand-in is a node of its own (its directory, sshd, mounts and processes)
	testenv.LookPath(t, "fio")
	s := newStandin(t, standinOptions{})
	target := filepath.Join(s.Root, "mnt/nvme/k3s")
	before := snapshot(t, s.Source)
	rows := dbRows(t, s.Source)
	spec := s.spec(target)
	spec.MeasureWrite = true
	res, err := k3smigration.Migrate(context.Background(), s.Host, spec, k3smigration.Hooks{})
	if err != nil {
		t.Fatalf("migrate: %v", err)
	}
	t.Logf("sequential writes: source %.0f MB/s, target %.0f MB/s", res.SourceWriteBps/1e6, res.TargetWriteBps/1e6)
	if res.SourceWriteBps <= 0 || res.TargetWriteBps <= 0 {
		t.Errorf("no write speeds measured: %+v", res)
	}
	checkMigrated(t, s, target, res.BackupPath, before, rows)
	left, _ := filepath.Glob(filepath.Join(s.Root, "*", "*", "*", ".clusterstorage-k3s-migration-fio"))
	more, _ := filepath.Glob(filepath.Join(s.Root, "*", ".clusterstorage-k3s-migration-fio"))
	if len(left)+len(more) > 0 {
		t.Errorf("fio directories left behind: %v %v", left, more)
	}
}
