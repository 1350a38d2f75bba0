package k3smigration_test

// The fault matrix on the cluster's k3s-shaped node (realnode_test.go): each case makes a
// migration fail at one step on the real systemd, containerd, kubelet and kine, checks that it
// rolled back to the original with nothing lost, and migrates again without the fault. The cases
// use the default method, symlink; the one that fails after the switch runs with config too (the
// steps before the switch do not depend on the method). The stand-in's matrix (TestMigrate_faults)
// keeps the same cases.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/k3smigration"
)

// realFault is one way a migration fails on the real node.
type realFault struct {
	name string
	// fillMiB of random data in the test's files (a copy long enough to be cut).
	fillMiB int
	// freeMiB, when set, leaves only the data's size plus this many MiB free on the target's disk
	// (negative: less than the data).
	freeMiB int
	// fault returns the Before hook that makes the migration fail (nil: none), given a function
	// that cancels the migration's context.
	fault func(t *testing.T, r *realK3s, vol string, cancel context.CancelFunc) func(context.Context, k3smigration.Step) error
	// step is where it fails; stopped whether k3s had been stopped; cause what the error says.
	step    k3smigration.Step
	stopped bool
	cause   string
	// fix undoes the fault before the migration is run again.
	fix func(t *testing.T, r *realK3s)
	// method is the switch method (default symlink).
	method k3smigration.Method
	// alias names the source through a symbolic link to its parent (/var/lib/rancher-link/k3s),
	// in both runs: the second resumes the first's copy only if it compares resolved paths.
	alias bool
	// ci marks the rows `make test` runs: the ones only a real node can check (a real SSH cut
	// while k3s is stopped, systemd failing to start k3s after the switch, a process holding the
	// datastore across a real stop). `make faults` (FAULTS_ALL=1) runs every row; the stand-in's
	// matrix (TestMigrate_faults, a unit test) runs every case in `make test` too.
	ci bool
}

// failStartOnTarget makes k3s.service fail to start while the source is a link (symlink) or its
// configuration names the target (config): a drop-in's ExecStartPre, which leaves the data as it
// is, removed when the test ends.
func failStartOnTarget(t *testing.T, r *realK3s, _ string, _ context.CancelFunc) func(context.Context, k3smigration.Step) error {
	r.mustExec("sh", "-c", `mkdir -p /run/systemd/system/k3s.service.d && printf '[Service]\nExecStartPre=/bin/sh -c "! test -L %s && ! grep -qF %s %s"\n' "$1" "$2" "$3" \
		>/run/systemd/system/k3s.service.d/clusterstorage-test-fail.conf && systemctl daemon-reload`, "sh", realSource, r.Target, realConfig)
	t.Cleanup(func() { r.allowStart() })
	return nil
}

// atStep returns a Before hook that runs f just before step.
func atStep(step k3smigration.Step, f func()) func(context.Context, k3smigration.Step) error {
	return func(_ context.Context, s k3smigration.Step) error {
		if s == step {
			f()
		}
		return nil
	}
}

var realFaults = []realFault{
	{
		name: "ssh connections cut during the first copy, the source named through a linked parent", fillMiB: 150, step: k3smigration.StepCopy, cause: "first copy", alias: true,
		fault: func(t *testing.T, r *realK3s, _ string, _ context.CancelFunc) func(context.Context, k3smigration.Step) error {
			return atStep(k3smigration.StepCopy, func() { r.onRsync(r.dropSSH) })
		},
	},
	{
		name: "ssh connections cut during the final copy", fillMiB: 150, stopped: true, step: k3smigration.StepFinalCopy, cause: "final copy", ci: true,
		fault: func(t *testing.T, r *realK3s, vol string, _ context.CancelFunc) func(context.Context, k3smigration.Step) error {
			return atStep(k3smigration.StepFinalCopy, func() { r.rewrite(vol); r.onRsync(r.dropSSH) })
		},
	},
	{
		name: "target filesystem too small", freeMiB: -32, step: k3smigration.StepPreflight, cause: "not enough free space",
		fix: func(t *testing.T, r *realK3s) { r.removeBalloon() },
	},
	{
		// The data grows by 96 MiB while k3s is stopped: more than the target has left. The second
		// run resumes into a target with room for the rest of the copy only, not for all the data.
		name: "target filesystem fills up during the final copy, then a resume into the nearly full target", freeMiB: 32, stopped: true,
		step: k3smigration.StepFinalCopy, cause: "No space left on device",
		fault: func(t *testing.T, r *realK3s, vol string, _ context.CancelFunc) func(context.Context, k3smigration.Step) error {
			return atStep(k3smigration.StepFinalCopy, func() { r.mustExec("dd", "if=/dev/urandom", "of="+vol+"/grown", "bs=1M", "count=96", "status=none") })
		},
		fix: func(t *testing.T, r *realK3s) {
			out := r.mustExec("sh", "-c", `truncate -s -160M "$1/balloon"; df -B1 --output=avail "$1" | tail -n 1; du -s -x -B1 "$2" | cut -f1`, "sh", path.Dir(r.Target), realSource)
			var free, data int64
			if _, err := fmt.Sscan(out, &free, &data); err != nil || free >= data {
				t.Fatalf("the target's disk should have less room than the data (free, data: %q): %v", out, err)
			}
		},
	},
	{
		name: "verification mismatch", stopped: true, step: k3smigration.StepVerify, cause: "differs",
		fault: func(t *testing.T, r *realK3s, vol string, _ context.CancelFunc) func(context.Context, k3smigration.Step) error {
			copied := path.Join(r.Target, strings.TrimPrefix(vol, realSource))
			return atStep(k3smigration.StepVerify, func() { r.mustExec("sh", "-c", `echo corrupted >>"$1/data"`, "sh", copied) })
		},
	},
	{
		// k3s.service fails to start once it would run on the target (failStartOnTarget), and the
		// rollback starts it on the original.
		name: "k3s fails to start on the target", stopped: true, step: k3smigration.StepStart, cause: "systemctl start k3s",
		fault: failStartOnTarget, fix: func(t *testing.T, r *realK3s) { r.allowStart() },
	},
	{
		name: "k3s fails to start on the target, with config", method: k3smigration.MethodConfig, stopped: true, step: k3smigration.StepStart, cause: "systemctl start k3s", ci: true,
		fault: failStartOnTarget, fix: func(t *testing.T, r *realK3s) { r.allowStart() },
	},
	{
		// k3s-killall.sh stops k3s and its containers, then fails: the stop fails and is rolled back.
		name: "k3s-killall.sh fails", stopped: true, step: k3smigration.StepStop, cause: "k3s-killall.sh failed (exit status 1)",
		fault: func(t *testing.T, r *realK3s, _ string, _ context.CancelFunc) func(context.Context, k3smigration.Step) error {
			r.replaceKillall("#!/bin/sh\nK3S_DATA_DIR=$K3S_DATA_DIR " + killallSaved + " \"$@\"\nexit 1\n")
			return nil
		},
		fix: func(t *testing.T, r *realK3s) { r.restoreKillall() },
	},
	{
		// A process of the node's own (not k3s's, not a shim's) keeps the datastore open across the
		// stop: the migration refuses to copy under it, names it, and k3s runs again on the original.
		name: "a process holds the datastore open across the stop", stopped: true, step: k3smigration.StepStop, cause: "processes other than containerd shims still use", ci: true,
		fault: func(t *testing.T, r *realK3s, _ string, _ context.CancelFunc) func(context.Context, k3smigration.Step) error {
			return atStep(k3smigration.StepStop, func() {
				r.mustExec("systemd-run", "--unit="+datastoreHolder, "--collect", "sh", "-c", `exec 3<"$1"; exec sleep 3600`, "sh", realSource+"/server/db/state.db")
				t.Cleanup(func() { r.Exec(t, "systemctl", "stop", datastoreHolder) }) //nolint:errcheck // stopped by fix already
			})
		},
		fix: func(t *testing.T, r *realK3s) { r.mustExec("systemctl", "stop", datastoreHolder) },
	},
	{
		name: "cancelled during the first copy", fillMiB: 150, step: k3smigration.StepCopy, cause: "context canceled",
		fault: func(t *testing.T, r *realK3s, _ string, cancel context.CancelFunc) func(context.Context, k3smigration.Step) error {
			return atStep(k3smigration.StepCopy, func() { r.onRsync(cancel) })
		},
	},
	{
		name: "cancelled during the final copy", fillMiB: 150, stopped: true, step: k3smigration.StepFinalCopy, cause: "context canceled",
		fault: func(t *testing.T, r *realK3s, vol string, cancel context.CancelFunc) func(context.Context, k3smigration.Step) error {
			return atStep(k3smigration.StepFinalCopy, func() { r.rewrite(vol); r.onRsync(cancel) })
		},
	},
}

// The fault matrix on the real node. The failed health check, the ninth case of the stand-in's
// matrix, is TestClusterK3sMigration_realNodeRollbackAfterStart; SSH lost for good is
// TestClusterK3sMigration_realNodeGuard.
func TestClusterK3sMigration_realNodeFaults(t *testing.T) {
	all := os.Getenv("FAULTS_ALL") != ""
	for _, tc := range realFaults {
		if !tc.ci && !all {
			continue // a row of `make faults`
		}
		t.Run(tc.name, func(t *testing.T) {
			r := newRealK3s(t)
			runsOn := r.startPod()
			vol := r.files(tc.fillMiB)
			if tc.freeMiB != 0 {
				r.balloon(tc.freeMiB)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			spec := r.spec(tc.method)
			if tc.alias {
				spec.Source = "/var/lib/rancher-link/k3s"
				r.mustExec("ln", "-sfn", path.Dir(realSource), path.Dir(spec.Source))
				t.Cleanup(func() { r.mustExec("rm", "-f", path.Dir(spec.Source)) })
			}
			hooks := k3smigration.KubeHooks(acctest.Kube(t), r.Name, false)
			var fault func(context.Context, k3smigration.Step) error
			if tc.fault != nil {
				fault = tc.fault(t, r, vol, cancel)
			}
			// The original as the failure finds it: right after the stop (k3s quiet), or before the
			// first copy when the failure comes earlier. Reading the stopped datastore with sqlite3
			// checkpoints it and removes its -wal and -shm, as k3s closing it cleanly does.
			var before string
			var rows, newest int
			hooks.Before = func(ctx context.Context, step k3smigration.Step) error {
				if fault != nil {
					if err := fault(ctx, step); err != nil {
						return err
					}
				}
				if step == k3smigration.StepPreflight || step == k3smigration.StepFinalCopy {
					before = r.manifest(realSource, realSource)
					rows, newest = r.datastore(realSource)
				}

				return nil
			}
			_, err := k3smigration.Migrate(ctx, r.Host(t), spec, hooks)
			expectRolledBack(t, err, tc.step, tc.stopped, tc.cause)

			if err := r.waitFor(realSource, 2*time.Minute); err != nil {
				t.Fatal(err)
			}
			if got := r.manifest(realSource, realSource); got != before {
				t.Errorf("the original changed:\n%s", lineDiff(before, got))
			}
			if got := r.rowsUpTo(realSource, newest); got != rows {
				t.Errorf("the datastore holds %d of the %d rows up to id %d it had: writes were lost", got, rows, newest)
			}
			r.checkOnOriginal("the rollback")
			if err := runsOn(realSource); err != nil {
				t.Error(err)
			}

			if tc.fix != nil {
				tc.fix(t, r)
			}
			before = r.manifest(realSource, realSource)
			res, err := k3smigration.Migrate(context.Background(), r.Host(t), spec, k3smigration.KubeHooks(acctest.Kube(t), r.Name, false))
			if err != nil {
				t.Fatalf("migrating again without the fault: %v", err)
			}
			if err := r.waitFor(r.Target, time.Minute); err != nil {
				t.Fatal(err)
			}
			// Absolute links name the data dir as k3s is told it: the source, unless config told it
			// the target (fixup then rewrote them).
			linksTo := realSource
			if spec.Method == k3smigration.MethodConfig {
				linksTo = r.Target
			}
			if got := r.manifest(r.Target, linksTo); got != before {
				t.Errorf("the target differs from the original:\n%s", lineDiff(before, got))
			}
			// The original, renamed (keep_backup), as k3s last wrote it: the target holds all of it.
			if err := r.checkHolds(r.Target, res.BackupPath); err != nil {
				t.Error(err)
			}
			if err := runsOn(r.Target); err != nil {
				t.Error(err)
			}
		})
	}
}

// spec migrates the real node's data dir to the test's target with method (default symlink).
func (r *realK3s) spec(method k3smigration.Method) k3smigration.Spec {
	if method == "" {
		method = k3smigration.MethodSymlink
	}
	return k3smigration.Spec{Source: realSource, Target: r.Target, Method: method, KeepBackup: true,
		StopTimeout: 30 * time.Second, HealthTimeout: 30 * time.Second, RollbackTimeout: time.Minute}
}

// datastoreHolder is the unit of the process that holds the datastore open in the fault matrix.
const datastoreHolder = "clusterstorage-test-datastore-holder"

// killallSaved is where replaceKillall keeps the node's own k3s-killall.sh.
const killallSaved = "/run/clusterstorage-test-k3s-killall.sh"

// replaceKillall puts script in place of the node's k3s-killall.sh until restoreKillall (or the
// end of the test) puts the original back.
func (r *realK3s) replaceKillall(script string) {
	r.mustExec("sh", "-c", `test -e "$2" || cp -p /usr/local/bin/k3s-killall.sh "$2"; printf '%s' "$1" >/usr/local/bin/k3s-killall.sh`, "sh", script, killallSaved)
	r.t.Cleanup(r.restoreKillall)
}

func (r *realK3s) restoreKillall() {
	r.mustExec("sh", "-c", `if test -e "$1"; then mv -f "$1" /usr/local/bin/k3s-killall.sh; fi`, "sh", killallSaved)
}

// allowStart removes the drop-in that makes k3s fail to start on the target.
func (r *realK3s) allowStart() {
	r.mustExec("sh", "-c", "rm -f /run/systemd/system/k3s.service.d/clusterstorage-test-fail.conf && systemctl daemon-reload")
}

func (r *realK3s) mustExec(args ...string) string {
	r.t.Helper()
	out, err := r.Exec(r.t, args...)
	if err != nil {
		r.t.Fatal(err)
	}
	return out
}

// files makes a directory of the test's below the source's server/static/charts (where k3s keeps
// the chart archives it serves): a file data, and fillMiB of random files; removed when the test
// ends. Not below storage/: local-path volumes there make the config method refuse.
func (r *realK3s) files(fillMiB int) string {
	vol := path.Join(realSource, "server/static/charts", acctest.RandomName("test"))
	r.mustExec("sh", "-c", `mkdir -p "$1" && echo "the user's data" >"$1/data" && i=0 && while [ $i -lt "$2" ]; do
		dd if=/dev/urandom of="$1/fill$i" bs=1M count=10 status=none; i=$((i + 10)); done`, "sh", vol, strconv.Itoa(fillMiB))
	r.t.Cleanup(func() {
		if out, err := r.Exec(r.t, "rm", "-rf", "--", vol); err != nil {
			r.t.Errorf("removing %s: %v %s", vol, err, out)
		}
	})
	return vol
}

// rewrite gives the test's fill files new content (k3s is stopped when the tests call it), so
// the final copy has work to do.
func (r *realK3s) rewrite(vol string) {
	r.mustExec("sh", "-c", `for f in "$1"/fill*; do dd if=/dev/urandom of="$f" bs=1M count=10 conv=notrunc status=none; done`, "sh", vol)
}

// balloon fills the target's disk until only the source's data plus freeMiB is free.
func (r *realK3s) balloon(freeMiB int) {
	r.mustExec("sh", "-c", `avail=$(df -B1 --output=avail "$1" | tail -n 1); need=$(du -s -x -B1 "$2" | cut -f1)
		fallocate -l $((avail - need - $3 * 1048576)) "$1/balloon"`, "sh", path.Dir(r.Target), realSource, strconv.Itoa(freeMiB))
	r.t.Cleanup(r.removeBalloon)
}

func (r *realK3s) removeBalloon() {
	if out, err := r.Exec(r.t, "rm", "-f", path.Dir(r.Target)+"/balloon"); err != nil {
		r.t.Errorf("removing the balloon: %v %s", err, out)
	}
}

// dropSSH cuts every SSH connection to the node: each session's process tree below the listening
// sshd is killed (what the connection ran dies with it, as the stand-in's DropConnections does);
// the listener stays, so the migration reconnects for its rollback.
func (r *realK3s) dropSSH() {
	if out, err := r.Exec(r.t, "sh", "-c", `tree() { for c in $(pgrep -P "$1"); do tree "$c"; done; kill -KILL "$1" 2>/dev/null; }
		for s in $(pgrep -P "$(pgrep -o -x sshd)"); do tree "$s"; done; true`); err != nil {
		r.t.Errorf("cutting SSH: %v %s", err, out)
	}
}

// onRsync calls f as soon as an rsync into the target runs on the node; it gives up when the test
// ends (so it never uses the test's T afterwards) or after two minutes.
func (r *realK3s) onRsync(f func()) {
	ctx, cancel := context.WithTimeout(r.t.Context(), 2*time.Minute)
	go func() {
		defer cancel()
		for ; ctx.Err() == nil; time.Sleep(20 * time.Millisecond) {
			if out, _ := r.Exec(r.t, "pgrep", "-f", "^rsync .* "+r.Target+"/"); strings.TrimSpace(out) != "" { //nolint:errcheck // no match exits 1
				f()
				return
			}
		}
	}()
}

// manifest describes what the migration must keep of dir, read on the node: every entry of the
// volumes (storage/, when there), the bundled binaries (data/) and server/ but the live datastore,
// with type, mode, owner, size, the SHA-256 of regular files and link targets (linksTo, the data dir
// k3s is told, written <data dir>: the config method points the copy's absolute links at the
// copy, the other methods leave them naming the source). agent/ is left
// out: containerd changes its content store, metadata and snapshots whenever it runs (the
// containers' layers are checked by startPod's check instead).
func (r *realK3s) manifest(dir, linksTo string) string {
	return r.mustExec("sh", "-c", `base=$2 && cd "$1" && set -- data server && if [ -d storage ]; then set -- storage "$@"; fi
		{ find "$@" \( -path server/db -o -path server/kine.sock \) -prune -o ! -type l -printf '%y %m %U:%G %s %p\n'
		  find "$@" -type l -printf 'l %U:%G %p -> %l\n' | sed "s| -> $base/| -> <data dir>/|"; } | LC_ALL=C sort
		find "$@" -path server/db -prune -o -type f -exec sha256sum {} + | LC_ALL=C sort -k 2`, "sh", dir, linksTo)
}

// lineDiff lists the lines only a or only b has.
func lineDiff(a, b string) string {
	count := map[string]int{}
	for _, l := range strings.Split(a, "\n") {
		count[l]++
	}
	for _, l := range strings.Split(b, "\n") {
		count[l]--
	}
	var out []string
	for l, n := range count {
		switch {
		case n > 0:
			out = append(out, "- "+l)
		case n < 0:
			out = append(out, "+ "+l)
		}
	}
	if len(out) > 40 {
		out = append(out[:40], fmt.Sprintf("... and %d more", len(out)-40))
	}
	return strings.Join(out, "\n")
}

// userDisk is a disk of the user's on the real node: a directory of the node's data disk
// bind-mounted at Mount (which did not exist), holding one file.
type userDisk struct {
	r                    *realK3s
	Mount, File, Content string
}

// mountUserDisk mounts a user's disk at mp with a file name holding content; it is unmounted and
// removed when the test ends.
func (r *realK3s) mountUserDisk(mp, name, content string) userDisk {
	t := r.t
	dir := path.Join(r.DataDisks[0], acctest.RandomName("userdisk"))
	r.mustExec("sh", "-c", `! test -e "$2" && mkdir -p "$1" "$2" && printf '%s' "$4" >"$1/$3" && mount --bind "$1" "$2"`, "sh", dir, mp, name, content)
	t.Cleanup(func() {
		if out, err := r.Exec(t, "sh", "-c", `umount "$2" && rmdir "$2" && rm -rf "$1"`, "sh", dir, mp); err != nil {
			t.Errorf("removing the test's mount: %v %s", err, out)
		}
	})
	return userDisk{r: r, Mount: mp, File: name, Content: content}
}

// expectRefusedUntouched migrates with spec and checks that the preflight refused, with an error
// that says every one of want, before k3s was touched (not restarted), and that the user's disk
// is still mounted with its file.
func (d userDisk) expectRefusedUntouched(spec k3smigration.Spec, want ...string) {
	r, t := d.r, d.r.t
	t.Helper()
	mainPID := func() string {
		return strings.TrimSpace(r.mustExec("systemctl", "show", "-p", "MainPID", "--value", "k3s"))
	}
	pid := mainPID()
	_, err := k3smigration.Migrate(context.Background(), r.Host(t), spec, k3smigration.KubeHooks(acctest.Kube(t), r.Name, false))
	var se *k3smigration.StepError
	if !errors.As(err, &se) || se.Step != k3smigration.StepPreflight || se.Stopped {
		t.Fatalf("want a refusal at the preflight, got %v", err)
	}
	t.Logf("error as the user sees it:\n%v", err)
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the error does not say %q", w)
		}
	}
	if out, err := r.Exec(t, "sh", "-c", `mountpoint -q "$1" && cat "$1/$2"`, "sh", d.Mount, d.File); err != nil || out != d.Content {
		t.Errorf("the user's disk at %s or its contents changed: %v %q", d.Mount, err, out)
	}
	if got := mainPID(); got != pid {
		t.Errorf("k3s was restarted (main PID %s, %s before)", got, pid)
	}
}

// A disk of the user's mounted below the data dir (at server/db/snapshots, where k3s keeps etcd
// snapshots): the migration refuses before k3s is touched, naming the mount, and leaves it
// mounted with its contents.
func TestClusterK3sMigration_realNodeMountBelow(t *testing.T) {
	r := newRealK3s(t)
	mp := realSource + "/server/db/snapshots"
	d := r.mountUserDisk(mp, "snapshot-1", "an etcd snapshot")
	d.expectRefusedUntouched(r.spec(""), "filesystems are mounted below "+realSource+": "+mp)
}

// The node's k3s-killall.sh in its form from before mid-2024 (tools/kube/k3s-killall-old.sh),
// which force-unmounts and removes every mount whose path starts with /var/lib/rancher/k3s: a
// target on the user's disk at /var/lib/rancher/k3s-nvme is refused before k3s is stopped (which
// runs killall), and the disk stays mounted with its contents.
func TestClusterK3sMigration_realNodeOldKillall(t *testing.T) {
	r := newRealK3s(t)
	r.replaceKillall(r.mustExec("cat", "/etc/rancher/k3s/standin/k3s-killall-old.sh"))
	d := r.mountUserDisk(realSource+"-nvme", "keep", "on the nvme disk")
	spec := r.spec("")
	spec.Target = d.Mount + "/k3s"
	d.expectRefusedUntouched(spec, "k3s-killall.sh", "before mid-2024", "rm -rf", `"/var/lib/rancher/k3s"`)
}

// carry_mounts on the real node: a disk of the user's at storage/ (where local-path volumes live)
// is carried along as a mount with the symlink method: bind-mounted at the same place below the
// target, the same filesystem (not a copy), the original mount left below the renamed original.
func TestClusterK3sMigration_realNodeCarryMounts(t *testing.T) {
	// Runs after the reset (cleanups run last registered first): the storage/ directory the test
	// made, so that the config method's tests that follow find no local-path volumes.
	var r *realK3s
	t.Cleanup(func() {
		if r == nil {
			return // newRealK3s stopped the test: there is no node
		}
		if out, err := r.Exec(t, "rmdir", "--", realSource+"/storage"); err != nil {
			t.Errorf("removing the test's storage/: %v %s", err, out)
		}
	})
	r = newRealK3s(t)
	runsOn := r.startPod()
	disk := path.Join(r.DataDisks[0], acctest.RandomName("userdisk"))
	storage := realSource + "/storage"
	var backup string
	r.mustExec("sh", "-c", `! test -e "$2" && mkdir -p "$1/pvc-1" "$2" && echo "volume data" >"$1/pvc-1/data" && mount --bind "$1" "$2"`, "sh", disk, storage)
	t.Cleanup(func() {
		// Before the reset: the carried mount, then the user's wherever it is now.
		if out, err := r.Exec(t, "sh", "-c", `for m in "$2/storage" "$3/storage" "$4"; do if mountpoint -q -- "$m"; then umount -R -- "$m" || exit 1; fi; done; rm -rf -- "$1"`,
			"sh", disk, r.Target, backup, storage); err != nil {
			t.Errorf("removing the test's mounts: %v %s", err, out)
		}
	})
	spec := r.spec(k3smigration.MethodSymlink)
	spec.CarryMounts = true
	res, err := k3smigration.Migrate(context.Background(), r.Host(t), spec, k3smigration.KubeHooks(acctest.Kube(t), r.Name, false))
	if err != nil {
		t.Fatal(err)
	}
	backup = res.BackupPath
	if len(res.CarriedMounts) != 1 || res.CarriedMounts[0] != "storage" {
		t.Errorf("carried mounts: %v", res.CarriedMounts)
	}
	if err := r.waitFor(r.Target, time.Minute); err != nil {
		t.Fatal(err)
	}
	// The same filesystem below the target and below the backup: a write through one shows at the other.
	if out, err := r.Exec(t, "sh", "-c", `mountpoint -q "$1/storage" && mountpoint -q "$2/storage" && test "$(cat "$1/storage/pvc-1/data")" = "volume data" &&
		echo new >"$1/storage/pvc-1/new" && test "$(cat "$2/storage/pvc-1/new")" = new`, "sh", r.Target, backup); err != nil {
		t.Errorf("the disk is not carried along as the same filesystem: %v %s", err, out)
	}
	if err := r.checkHolds(r.Target, backup); err != nil {
		t.Error(err)
	}
	if err := runsOn(r.Target); err != nil {
		t.Error(err)
	}
}
