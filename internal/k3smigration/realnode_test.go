package k3smigration_test

// Tests on the cluster's k3s-shaped node (tools/kube/cluster.sh makes node 3 one): a machine whose
// PID 1 is a real systemd, with k3s.service as k3s's install script writes it (Type=notify,
// KillMode=process, Delegate=yes), containerd started from <data-dir>/data/current/bin with its
// shims and the containers' rootfs mounts under /run/k3s, the cluster's real kubelet registered as
// that node, and k3s's datastore: a real kine with sqlite at <data-dir>/server/db/state.db, kept
// busy by a client. Unlike the stand-in (standin_test.go), the test simulates nothing on the node:
// systemctl, systemd-run's timers (the node guard), the shims that outlive `systemctl stop k3s`,
// the data dir a plain directory of the system disk (a mount point of its own where a test binds it
// on itself) and the datastore are the real things. What still differs from a real k3s node is
// listed in tools/kube/k3s-standin.sh.

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/k3smigration"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

const (
	realSource = "/var/lib/rancher/k3s"
	realConfig = "/etc/rancher/k3s/config.yaml"
)

// realK3s is the k3s-shaped node of the cluster, for one test. Target is a fresh directory on the
// node's data disk (a loop-mounted ext4 of its own, where the source is on the node's system disk).
type realK3s struct {
	acctest.ClusterNode
	t      *testing.T
	Target string
}

// newRealK3s returns the k3s-shaped node with k3s running on its default data dir, and puts it back
// that way when the test ends, whatever the test left (k3s on the target, a configured data-dir),
// so that the node serves the tests that follow.
func newRealK3s(t *testing.T) *realK3s {
	t.Helper()
	n := acctest.RequireK3sNode(t)
	if len(n.DataDisks) == 0 {
		t.Fatalf("the k3s-shaped node %s has no data disk (CLUSTER_DATA_DISKS)", n.Name)
	}
	r := &realK3s{ClusterNode: n, t: t, Target: path.Join(n.DataDisks[0], acctest.RandomName("k3s"))}
	if active, dir := r.state(); active != "active" || dir != realSource {
		t.Fatalf("k3s on node %s is %q on %q before the test, want active on %s", n.Name, active, dir, realSource)
	}
	t.Cleanup(r.reset)
	return r
}

// state is k3s.service's state and the data dir the running k3s uses, resolved ("" when none
// runs: after the symlink method k3s still names the source, which leads to the target), read
// inside the machine (not over SSH, which a test may have cut): the path of its kine's socket.
func (r *realK3s) state() (active, dataDir string) {
	out, err := r.Exec(r.t, "sh", "-c", `systemctl is-active k3s
		ps -eo args | sed -n 's|.*kine .*--listen-address unix://\([^ ]*\)/server/kine\.sock.*|\1|p' | while read -r d; do realpath -m -- "$d"; done`)
	if err != nil {
		r.t.Logf("reading k3s's state on %s: %v", r.Name, err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) > 1 {
		dataDir = lines[len(lines)-1]
	}
	return strings.TrimSpace(lines[0]), dataDir
}

// waitFor waits until k3s is active on dataDir and the node is Ready.
func (r *realK3s) waitFor(dataDir string, timeout time.Duration) error {
	client := acctest.Kube(r.t)
	return kube.Poll(context.Background(), 200*time.Millisecond, timeout, "k3s active on "+dataDir+" and node "+r.Name+" Ready", func(ctx context.Context) (bool, string, error) {
		if active, dir := r.state(); active != "active" || dir != dataDir {
			return false, fmt.Sprintf("k3s %s on %q", active, dir), nil
		}
		n, err := client.CoreV1().Nodes().Get(ctx, r.Name, metav1.GetOptions{})
		if err != nil {
			return kube.KeepPolling(err)
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return true, "", nil
			}
		}
		return false, "node not Ready", nil
	})
}

// reset puts k3s back on its default data dir, a plain directory again (no data-dir in its config,
// no link, the newest data: a target k3s ran on is copied back over the original), and removes the
// test's target, the migration's backups and marker, and any guard the test left armed.
func (r *realK3s) reset() {
	t := r.t
	if out, err := r.Exec(t, "sh", "-c", `systemctl stop 'clusterstorage-k3s-guard-*.timer' 2>/dev/null; systemctl start ssh`); err != nil {
		t.Logf("reset: %v %s", err, out)
	}
	active, dir := r.state()
	cfg, _ := r.Exec(t, "sh", "-c", `cat "$1"; if test -L "$2"; then echo "$2 is a link"; fi; if mountpoint -q -- "$2"; then echo "$2 is a mount point"; fi`, //nolint:errcheck // shown below when it matters
		"sh", realConfig, realSource)
	if active != "active" || dir != realSource || strings.Contains(cfg, "data-dir:") || strings.Contains(cfg, realSource+" is a") {
		t.Logf("reset: k3s %s on %q, config:\n%s", active, dir, cfg)
		// k3s-killall.sh of the data dir in use stops its containers, as a migration does.
		// Where k3s ran last ($3, else the config's data-dir, else the link's or the bind mount's
		// target) is copied back over the original (moved back first when the migration renamed it).
		if err := r.stop(dir); err != nil {
			t.Errorf("reset: %v", err)
			return
		}
		if out, err := r.Exec(t, "sh", "-c", `to=${3:-$(sed -n 's/^data-dir: *//p' "$1" | tr -d '"')}; sed -i '/^data-dir:/d' "$1"
			if test -L "$2"; then to=${to:-$(readlink -f -- "$2")}; rm -f -- "$2" || exit 1; fi
			if mountpoint -q -- "$2"; then
				b=$(awk -v s="$2" '$2 == s && $4 == "bind" {print $1}' /etc/fstab); to=${b:-$to}
				umount -- "$2" && rmdir -- "$2" && sed -i "\\| $2 none bind |d" /etc/fstab || exit 1
			fi
			for b in "$2".pre-migration-*; do if test -d "$b" && ! test -e "$2"; then mv -- "$b" "$2" || exit 1; fi; done
			if test -n "$to" && test "$to" != "$2" && test -d "$to"; then
				rsync -aHAXS --numeric-ids --delete --exclude=/`+k3smigration.MarkerName+` "$to/" "$2/" || exit 1
			fi
			rm -rf -- "$2".pre-migration-* "$2.clusterstorage-restore"; systemctl start k3s`,
			"sh", realConfig, realSource, dir); err != nil {
			t.Errorf("reset: putting k3s back on %s: %v %s", realSource, err, out)
		}
	}
	if out, err := r.Exec(t, "sh", "-c", `rm -rf -- "$1" "$2" "$3".pre-migration-*`, "sh", r.Target, path.Join(realSource, k3smigration.MarkerName), realSource); err != nil {
		t.Errorf("reset: %v %s", err, out)
	}
	if err := r.waitFor(realSource, 2*time.Minute); err != nil {
		t.Errorf("reset: %v", err)
	}
	// The next test starts from a sound datastore, or this one is named as the one that broke it.
	if out, err := r.Exec(t, "sqlite3", "-readonly", "-cmd", ".timeout 10000", realSource+"/server/db/state.db", "PRAGMA integrity_check;"); err != nil || strings.TrimSpace(out) != "ok" {
		t.Errorf("reset: the datastore in %s fails sqlite's integrity check: %v %s", realSource, err, firstLines(out, 10))
	}
}

// stop stops k3s and its containers (k3s-killall.sh of the data dir it ran on, dir, else the
// source) as a migration does, and then waits, as the migration's stop does, until no process but
// containerd's shims uses the source, the target or dir: a copy or a move of the data dir while
// the datastore is still open breaks it. It fails naming the processes that stay.
func (r *realK3s) stop(dir string) error {
	if out, err := r.Exec(r.t, "sh", "-c", `systemctl stop k3s; K3S_DATA_DIR=${2:-$1} /usr/local/bin/k3s-killall.sh`, "sh", realSource, dir); err != nil {
		return fmt.Errorf("stopping k3s: %v %s", err, out)
	}
	dirs := []string{realSource, r.Target}
	if dir != "" && dir != realSource && dir != r.Target {
		dirs = append(dirs, dir)
	}
	err := kube.Poll(context.Background(), 200*time.Millisecond, 30*time.Second, "no process but containerd's shims to use "+strings.Join(dirs, ", "), func(ctx context.Context) (bool, string, error) {
		out, err := r.Exec(r.t, append([]string{"sh", "-c", k3smigration.HoldersScript(), "sh"}, dirs...)...)
		others := k3smigration.OtherHolders([]byte(out))
		return err == nil && others == "", fmt.Sprintf("%s still use them (%v)", others, err), nil // a failed look is looked at again
	})
	if err != nil {
		return fmt.Errorf("after k3s stopped: %w", err)
	}
	return nil
}

// firstLines is s up to its nth line.
func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

// journal selects the rows kvwriter wrote: every one a key of its own, never overwritten, so kine's
// compaction (which removes superseded revisions) never removes one.
const journal = "FROM kine WHERE name LIKE '/registry/clusterstorage/journal/%'"

// datastore is what the kine datastore in dataDir holds: kvwriter's rows and the newest one's id,
// after sqlite found the file intact. It reads the file inside the machine while kine may write it.
func (r *realK3s) datastore(dataDir string) (rows, newest int) {
	r.t.Helper()
	out, err := r.Exec(r.t, "sqlite3", "-cmd", ".timeout 10000", dataDir+"/server/db/state.db",
		"SELECT count(*) || ' ' || max(id) "+journal+"; PRAGMA integrity_check;")
	f := strings.Fields(out)
	if err != nil || len(f) != 3 || f[2] != "ok" {
		r.t.Fatalf("the datastore in %s: %v %q", dataDir, err, out)
	}
	rows, _ = strconv.Atoi(f[0])
	newest, _ = strconv.Atoi(f[1])
	return rows, newest
}

// rowsUpTo counts kvwriter's rows in the datastore in dataDir with an id up to id (rows, once
// written, keep their ids: a copy that holds every write up to id has exactly as many).
func (r *realK3s) rowsUpTo(dataDir string, id int) int {
	r.t.Helper()
	out, err := r.Exec(r.t, "sqlite3", "-cmd", ".timeout 10000", dataDir+"/server/db/state.db", fmt.Sprintf("SELECT count(*) %s AND id <= %d;", journal, id))
	n, convErr := strconv.Atoi(strings.TrimSpace(out))
	if err != nil || convErr != nil {
		r.t.Fatalf("the datastore in %s: %v %q", dataDir, err, out)
	}
	return n
}

// checkHolds checks that the datastore in copy holds every row the datastore in original holds
// (original no longer written: k3s runs elsewhere).
func (r *realK3s) checkHolds(copyDir, original string) error {
	rows, newest := r.datastore(original)
	if got := r.rowsUpTo(copyDir, newest); got != rows {
		return fmt.Errorf("the datastore in %s has %d of the %d rows up to id %d that %s holds: writes were lost", copyDir, got, rows, newest, original)
	}
	return nil
}

// startPod runs a long-lived container on the node and returns a check that it runs with its root
// filesystem from dataDir's containerd: the migration stops every container (k3s-killall.sh kills
// the shims: their overlay layers live in the data dir, so none may keep writing to the old one)
// and the kubelet starts them again from the copy.
func (r *realK3s) startPod() func(dataDir string) error {
	t := r.t
	client := acctest.Kube(t)
	name := acctest.RandomName("k3sm-real")
	zero := int64(0)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeName: r.Name, TerminationGracePeriodSeconds: &zero,
			Containers: []corev1.Container{{Name: "sleeper", Image: acctest.BusyboxImage, ImagePullPolicy: corev1.PullNever, Command: []string{"sleep", "3609"}}},
		},
	}
	if _, err := client.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.CoreV1().Pods("default").Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: &zero}) //nolint:errcheck // best effort
	})
	running := func(ctx context.Context) (bool, string, error) {
		p, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return kube.KeepPolling(err)
		}
		if len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].State.Running == nil {
			return false, "container not running", nil
		}
		return true, "", nil
	}
	if err := kube.Poll(context.Background(), 200*time.Millisecond, 2*time.Minute, "pod "+name+" to run", running); err != nil {
		t.Fatal(err)
	}
	return func(dataDir string) error {
		var why error
		err := kube.Poll(context.Background(), 200*time.Millisecond, 2*time.Minute, "pod "+name+" running on "+dataDir, func(ctx context.Context) (bool, string, error) {
			if ok, reason, err := running(ctx); !ok || err != nil {
				return ok, reason, err
			}
			why = r.containersOn(dataDir)
			return why == nil, fmt.Sprint(why), nil
		})
		if err != nil && why != nil {
			return why
		}
		return err
	}
}

// containersOn checks that the node's containers run on root filesystems whose layers are all in
// dataDir's containerd (paths resolved: the symlink method leaves k3s naming the source), and that
// there is at least one.
func (r *realK3s) containersOn(dataDir string) error {
	out, err := r.Exec(r.t, "awk", `$3 == "overlay" && $2 ~ "^/run/k3s/containerd/" {print $4}`, "/proc/self/mounts")
	if err != nil {
		return err
	}
	mounts := strings.Fields(out)
	if len(mounts) == 0 {
		return fmt.Errorf("no container root filesystem is mounted on node %s", r.Name)
	}
	layers := []string{"realpath", "-m", "--"}
	for _, opts := range mounts {
		for _, o := range strings.Split(opts, ",") {
			if k, dir, ok := strings.Cut(o, "="); ok && (k == "upperdir" || k == "lowerdir" || k == "workdir") {
				layers = append(layers, strings.Split(dir, ":")...)
			}
		}
	}
	out, err = r.Exec(r.t, layers...)
	if err != nil {
		return err
	}
	want := dataDir + "/agent/containerd/"
	for _, d := range strings.Fields(out) {
		if !strings.HasPrefix(d, want) {
			return fmt.Errorf("a container on node %s runs on %s, not on the data dir %s", r.Name, d, dataDir)
		}
	}
	return nil
}

// The whole resource through the CLI on the real node, with the default method: the data dir, a
// plain directory, is renamed and replaced by a link to the target; a container runs on the node
// throughout, and the datastore is written all along. Destroy with restore_on_destroy moves the
// data back (a plain directory again, with every row k3s wrote on the target).
func TestAccK3sDataDirMigration_realNode(t *testing.T) {
	r := newRealK3s(t)
	runsOn := r.startPod()
	config := acctest.ProviderConfigNodes(r.ClusterNode) + fmt.Sprintf(`
resource "clusterstorage_k3s_data_dir_migration" "test" {
  node               = %q
  target             = %q
  free_space_margin  = "0"
  restore_on_destroy = true
}
`, r.Name, r.Target)
	name := "clusterstorage_k3s_data_dir_migration.test"
	onTarget := func(s *terraform.State) error {
		if err := r.waitFor(r.Target, time.Minute); err != nil {
			return err
		}
		if link, err := r.Exec(t, "readlink", realSource); err != nil || strings.TrimSpace(link) != r.Target {
			return fmt.Errorf("%s links to %q (%v), want the target", realSource, link, err)
		}
		if cfg, err := r.Exec(t, "cat", realConfig); err != nil || strings.Contains(cfg, "data-dir:") {
			return fmt.Errorf("%s sets data-dir (or cannot be read: %v):\n%s", realConfig, err, cfg)
		}
		// The renamed original, as k3s last wrote it: the target holds all of it.
		backup := s.RootModule().Resources[name].Primary.Attributes["backup_path"]
		if !strings.HasPrefix(backup, realSource+".pre-migration-") {
			return fmt.Errorf("backup_path is %q", backup)
		}
		if err := r.checkHolds(r.Target, backup); err != nil {
			return err
		}
		return runsOn(r.Target)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy: func(*terraform.State) error {
			if err := r.waitFor(realSource, time.Minute); err != nil {
				return err
			}
			if out, err := r.Exec(t, "sh", "-c", `test -d "$1" && ! test -L "$1"`, "sh", realSource); err != nil {
				return fmt.Errorf("after the restore %s is not a plain directory (%v): %s", realSource, err, out)
			}
			// The target, where k3s ran until the restore (kept: keep_backup): the original holds all of it.
			if err := r.checkHolds(realSource, r.Target); err != nil {
				return err
			}
			return runsOn(realSource)
		},
		Steps: []resource.TestStep{
			{Config: config, Check: resource.ComposeTestCheckFunc(onTarget, resource.TestCheckResourceAttr(name, "switch_method", "symlink"))},
			{Config: config, PlanOnly: true},
		},
	})
}

// A data dir that is a mount point of its own (here the directory bound on itself): the symlink
// method is refused before k3s is touched; config migrates and leaves the mount point in place,
// and the restore is refused (it would replace the mount point's contents), k3s left on the target.
func TestClusterK3sMigration_realNodeMountPointSource(t *testing.T) {
	r := newRealK3s(t)
	runsOn := r.startPod()
	r.mustExec("mount", "--bind", realSource, realSource)
	t.Cleanup(func() {
		// Lazily: k3s may still hold files through it (the same files as below it).
		if out, err := r.Exec(t, "umount", "-l", realSource); err != nil {
			t.Errorf("removing the test's mount: %v %s", err, out)
		}
	})
	spec := r.spec(k3smigration.MethodSymlink)
	// A file of the test's that nothing else writes (the datastore changes all the time).
	vol := r.files(0)
	d := userDisk{r: r, Mount: realSource, File: strings.TrimPrefix(vol, realSource+"/") + "/data", Content: "the user's data\n"}
	d.expectRefusedUntouched(spec, `is itself a mount point, so it cannot be renamed: use switch_method = "config"`)

	spec.Method = k3smigration.MethodConfig
	res, err := k3smigration.Migrate(context.Background(), r.Host(t), spec, k3smigration.KubeHooks(acctest.Kube(t), r.Name, false))
	if err != nil {
		t.Fatal(err)
	}
	if !res.LeftInPlace(spec) {
		t.Errorf("the mount point should be left in place, the result says backup %q", res.BackupPath)
	}
	if err := r.waitFor(r.Target, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := r.checkHolds(r.Target, realSource); err != nil {
		t.Error(err)
	}
	// containerd's absolute link follows the data dir.
	if link, err := r.Exec(t, "readlink", r.Target+"/data/current"); err != nil || !strings.HasPrefix(link, r.Target+"/") {
		t.Errorf("data/current on the target is %q (%v)", link, err)
	}
	if err := runsOn(r.Target); err != nil {
		t.Error(err)
	}
	_, err = k3smigration.Restore(context.Background(), r.Host(t), spec, k3smigration.KubeHooks(acctest.Kube(t), r.Name, false))
	if err == nil || !strings.Contains(err.Error(), "is a mount point, which the migration left in place: it holds the data as it was at the migration") {
		t.Fatalf("want the restore refused, got %v", err)
	}
	if err := r.waitFor(r.Target, time.Minute); err != nil {
		t.Error(err)
	}
}

// The bind_mount method on the real node: the target bind-mounted on the source (with its fstab
// line), then the restore: a plain directory again, with every row k3s wrote on the target.
func TestClusterK3sMigration_realNodeBindMount(t *testing.T) {
	r := newRealK3s(t)
	runsOn := r.startPod()
	spec := r.spec(k3smigration.MethodBindMount)
	hooks := k3smigration.KubeHooks(acctest.Kube(t), r.Name, false)
	res, err := k3smigration.Migrate(context.Background(), r.Host(t), spec, hooks)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.waitFor(realSource, time.Minute); err != nil {
		t.Fatal(err)
	}
	if out, err := r.Exec(t, "sh", "-c", `mountpoint -q "$1" && test "$(stat -c %d:%i "$1")" = "$(stat -c %d:%i "$2")" && grep -F "$2 $1 none bind" /etc/fstab`, "sh", realSource, r.Target); err != nil {
		t.Errorf("%s is not the target bind-mounted with its fstab line: %v %s", realSource, err, out)
	}
	if err := r.checkHolds(r.Target, res.BackupPath); err != nil {
		t.Error(err)
	}
	if err := runsOn(realSource); err != nil {
		t.Error(err)
	}
	if _, err := k3smigration.Restore(context.Background(), r.Host(t), spec, hooks); err != nil {
		t.Fatal(err)
	}
	if err := r.waitFor(realSource, time.Minute); err != nil {
		t.Fatal(err)
	}
	if out, err := r.Exec(t, "sh", "-c", `! mountpoint -q "$1" && ! grep -F "$2" /etc/fstab`, "sh", realSource, r.Target); err != nil {
		t.Errorf("after the restore %s is still a mount point, or fstab names the target: %v %s", realSource, err, out)
	}
	if err := r.checkHolds(realSource, r.Target); err != nil {
		t.Error(err)
	}
	if err := runsOn(realSource); err != nil {
		t.Error(err)
	}
}

// The node guard on the real node's systemd: SSH is lost for good (sshd stopped and every session
// killed, inside the machine) once k3s is stopped, or once it runs on the target and has written
// there, so neither the migration nor its rollback can reach the node; the guard's transient timer
// fires and puts k3s back on the original, copying back what k3s wrote on the target first.
func TestClusterK3sMigration_realNodeGuard(t *testing.T) {
	for _, method := range []k3smigration.Method{k3smigration.MethodSymlink, k3smigration.MethodConfig} {
		for _, tc := range sshLossCases {
			t.Run(string(method)+"/"+tc.name, func(t *testing.T) {
				r := newRealK3s(t)
				runsOn := r.startPod()
				rowsBefore, _ := r.datastore(realSource)
				spec := r.spec(method)
				spec.RollbackTimeout, spec.GuardDelay = 20*time.Second, 20*time.Second
				hooks := k3smigration.KubeHooks(acctest.Kube(t), r.Name, false)
				hooks.Before = tc.cutAt(func() {
					if out, err := r.Exec(t, "sh", "-c", "systemctl stop ssh; pkill -KILL -x sshd; true"); err != nil {
						t.Errorf("cutting SSH: %v %s", err, out)
					}
				})
				res, err := k3smigration.Migrate(context.Background(), r.Host(t), spec, hooks)
				tc.checkRollbackUnreachable(t, res, err, realSource, r.Target)
				if err := r.waitFor(realSource, 2*time.Minute); err != nil {
					log, _ := r.Exec(t, "sh", "-c", "journalctl -n 60 --no-pager -u 'clusterstorage-k3s-guard-*' -u k3s") //nolint:errcheck // diagnostics
					t.Fatalf("the guard did not bring k3s back: %v\n%s", err, log)
				}
				r.checkOnOriginal("the guard")
				if rows, _ := r.datastore(realSource); rows < rowsBefore {
					t.Errorf("the datastore lost rows: %d, %d before", rows, rowsBefore)
				}
				if tc.started {
					// The target, where k3s ran last, no longer changes: the original holds all of it.
					if err := r.checkHolds(realSource, r.Target); err != nil {
						t.Error(err)
					}
				}
				if err := runsOn(realSource); err != nil {
					t.Error(err)
				}
			})
		}
	}
}

// The health check fails after k3s ran on the target, where kine's client kept writing: the
// rollback stops k3s there, copies the target back over the original (the datastore byte for
// byte) and starts k3s on it, so no write made on the target is lost.
func TestClusterK3sMigration_realNodeRollbackAfterStart(t *testing.T) {
	for _, method := range []k3smigration.Method{k3smigration.MethodSymlink, k3smigration.MethodConfig} {
		t.Run(string(method), func(t *testing.T) { realNodeRollbackAfterStart(t, method) })
	}
}

func realNodeRollbackAfterStart(t *testing.T, method k3smigration.Method) {
	r := newRealK3s(t)
	runsOn := r.startPod()
	_, newestBefore := r.datastore(realSource)
	spec := r.spec(method)
	spec.HealthTimeout = 5 * time.Second
	hooks := k3smigration.KubeHooks(acctest.Kube(t), r.Name, false)
	// The node is held unhealthy for the migration's health check only (which gives up after
	// HealthTimeout); the rollback's own check, later, sees the real node.
	var healthCheck time.Time
	ready := hooks.NodeReady
	hooks.Before = func(_ context.Context, step k3smigration.Step) error {
		if step == k3smigration.StepHealthy {
			healthCheck = time.Now()
		}
		return nil
	}
	hooks.NodeReady = func(ctx context.Context, since time.Time) (bool, string, error) {
		if time.Since(healthCheck) < spec.HealthTimeout+time.Second {
			return false, "the test holds the node unhealthy", nil
		}
		return ready(ctx, since)
	}
	res, err := k3smigration.Migrate(context.Background(), r.Host(t), spec, hooks)
	var se *k3smigration.StepError
	if !errors.As(err, &se) || se.RollbackErr != nil || !se.Started || !se.CopiedBack {
		t.Fatalf("want a failed health check rolled back with a copy back, got %+v %v", res, err)
	}
	t.Logf("error as the user sees it:\n%v", err)
	if err := r.waitFor(realSource, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, newest := r.datastore(r.Target); newest <= newestBefore {
		t.Fatalf("k3s wrote nothing on the target (newest row %d, %d before the migration): the test proves nothing", newest, newestBefore)
	}
	if err := r.checkHolds(realSource, r.Target); err != nil {
		t.Error(err)
	}
	r.checkOnOriginal("the rollback")
	if err := runsOn(realSource); err != nil {
		t.Error(err)
	}
}

// checkOnOriginal checks that after what (a rollback, the guard) the source is a plain directory
// again, with no data-dir in k3s's configuration.
func (r *realK3s) checkOnOriginal(what string) {
	r.t.Helper()
	if out, err := r.Exec(r.t, "sh", "-c", `test -d "$1" && ! test -L "$1" && ! mountpoint -q -- "$1" && ! grep -q '^data-dir:' "$2"`, "sh", realSource, realConfig); err != nil {
		cfg, _ := r.Exec(r.t, "cat", realConfig) //nolint:errcheck // diagnostics
		r.t.Errorf("after %s, %s is not a plain directory, or %s sets data-dir (%v %s):\n%s", what, realSource, realConfig, err, out, cfg)
	}
}

// `systemctl stop k3s` returns only once the processes k3s started are gone, as on a real node
// (real k3s runs kine in its own process): under load too, when a child that is only left to die
// of its parent-death signal is still running after the unit's main process exited (issue 31:
// a second kine then opened the database the first still had open). Right after the stop
// returned, none of the main process's children (kine, kvwriter, containerd, the kubelet) exists,
// not even unreaped, and nothing but containerd's shims (left running by KillMode=process, as on
// a real node) has a file open below the data dir. Three rounds, with a pod running (its shim
// stays) and four busy loops on the machine.
func TestClusterK3sMigration_realNodeStopsLikeK3s(t *testing.T) {
	r := newRealK3s(t)
	r.startPod()
	unit := acctest.RandomName("clusterstorage-test-load")
	r.mustExec("systemd-run", "--unit="+unit, "--collect", "sh", "-c", "for i in 1 2 3 4; do (while :; do :; done) & done; wait")
	t.Cleanup(func() { r.Exec(t, "systemctl", "stop", unit) }) //nolint:errcheck // gone already when the machine stopped
	stopAndLook := `main=$(systemctl show -p MainPID --value k3s)
		kids=$(pgrep -P "$main" | tr '\n' ' ')
		test -n "$kids" || { echo "k3s (pid $main) has no children before the stop" >&2; exit 1; }
		systemctl stop k3s || exit 1
		for p in $kids; do if kill -0 "$p" 2>/dev/null; then printf 'alive %s %s\n' "$p" "$(cat "/proc/$p/comm")"; fi; done
		` + k3smigration.HoldersScript()
	for round := 1; round <= 3; round++ {
		out, err := r.Exec(t, "sh", "-c", stopAndLook, "sh", realSource)
		if err != nil {
			t.Fatalf("round %d: %v %s", round, err, out)
		}
		var alive []string
		for _, line := range strings.Split(out, "\n") {
			if rest, ok := strings.CutPrefix(line, "alive "); ok {
				alive = append(alive, rest)
			}
		}
		if len(alive) > 0 {
			t.Errorf("round %d: right after systemctl stop k3s returned, children of k3s still exist: %s", round, strings.Join(alive, ", "))
		}
		if others := k3smigration.OtherHolders([]byte(out)); others != "" {
			t.Errorf("round %d: right after systemctl stop k3s returned, processes other than containerd's shims use %s: %s", round, realSource, others)
		}
		r.mustExec("systemctl", "start", "k3s")
		if err := r.waitFor(realSource, 2*time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if shims := r.mustExec("sh", "-c", "pgrep -c containerd-shim || true"); strings.TrimSpace(shims) == "0" {
		t.Errorf("no containerd shim ran through the stops: the pod's container should have outlived them")
	}
}
