package volumemigration

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/capacity"
)

// rsyncDaemon runs the daemon pod's script with the machine's rsync on dst (its /target), on a
// free port of 127.0.0.1 with password "pw", until the test ends; it returns the REMOTE the
// client's script gets and the daemon's ID.
func rsyncDaemon(t *testing.T, dst string) (remote, id string) {
	t.Helper()
	needRsyncRoot(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	port := l.Addr().(*net.TCPAddr).Port //nolint:forcetypeassert // a TCP listener's
	must(t, l.Close())
	id = newMarker()
	log, done := startRsyncd(t, dst, port, id)
	if line := waitVerdict(t, log, done, id); line != id+" listening "+strconv.Itoa(port) {
		t.Fatalf("the rsync daemon does not listen: %q\n%s", line, log.String())
	}
	return "rsync://" + rsyncUser + "@127.0.0.1:" + strconv.Itoa(port), id
}

// needRsyncRoot skips (fails in CI) a test of the daemon's script without rsync or root.
func needRsyncRoot(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("rsync"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("rsync is not installed (scripts/deps.sh installs it)")
		}
		t.Skip("rsync is not installed")
	}
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("not root: the daemon chroots into the volume and sets root's groups, as root in its pod")
		}
		t.Skip("the daemon chroots into the volume and sets root's groups, as root in its pod: run as root")
	}
}

// startRsyncd starts rsyncd.sh on dst, listening on 127.0.0.1:port (its pod IP), in a process
// group of its own that the test's end kills; done is closed when the script ends.
func startRsyncd(t *testing.T, dst string, port int, id string) (log *syncLog, done chan struct{}) {
	t.Helper()
	dir := t.TempDir()
	secrets := filepath.Join(dir, "secrets")
	must(t, os.WriteFile(secrets, []byte(rsyncUser+":pw\n"), 0o600))
	cmd := exec.Command("sh", "-c", rsyncdScript, "rsyncd.sh", strconv.Itoa(port), secrets, id)
	cmd.Env = append(os.Environ(), "TARGET="+dst, "TMPDIR="+dir, "ADDRESS=127.0.0.1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	log = &syncLog{}
	cmd.Stdout, cmd.Stderr = log, log
	must(t, cmd.Start())
	done = make(chan struct{})
	go func() {
		_ = cmd.Wait() //nolint:errcheck // its status is in its log
		close(done)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) //nolint:errcheck // it may have ended
		<-done
		if t.Failed() {
			t.Logf("rsync daemon log:\n%s", log.String())
		}
	})
	return log, done
}

// waitVerdict waits (10 s at most) for the script's line that says whether it listens, and
// returns it ("" when the script ended without one).
func waitVerdict(t *testing.T, log *syncLog, done chan struct{}, id string) string {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		for _, l := range strings.Split(log.String(), "\n") {
			if strings.HasPrefix(l, id+" ") {
				return l
			}
		}
		select {
		case <-done:
			done = nil // once more, for a line written just before the end
			if !strings.Contains(log.String(), id+" ") {
				return ""
			}
		case <-deadline:
			t.Fatalf("the rsync daemon's script said nothing within 10 s:\n%s", log.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// syncLog is a log written by a process and read by the test.
type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestRsyncdPortTaken: the daemon's script listens on its address only, and says so only once
// its own listing answers with its ID. A port something else has on that address (any program,
// here a plain listener, or another run's daemon) makes it say "failed" at once, its log naming
// the address in use, which the provider takes for a port to try another of; the client of the
// run whose port it is finds the daemon of the other run not its own and does not copy to it.
func TestRsyncdPortTaken(t *testing.T) {
	needRsyncRoot(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	t.Cleanup(func() { _ = l.Close() })  //nolint:errcheck // the test's end
	port := l.Addr().(*net.TCPAddr).Port //nolint:forcetypeassert // a TCP listener's
	id := newMarker()
	start := time.Now()
	log, done := startRsyncd(t, t.TempDir(), port, id)
	if line := waitVerdict(t, log, done, id); !strings.HasPrefix(line, id+" failed ") || !strings.Contains(log.String(), "Address already in use") {
		t.Errorf("a port a listener has: %q\n%s", line, log.String())
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the failed bind took %s to be said", took)
	}
	// Another run's daemon on the port: this run's daemon fails the same way, and this run's
	// client, given that port, does not copy to the other run's daemon.
	remote, other := rsyncDaemon(t, t.TempDir())
	port, err = strconv.Atoi(remote[strings.LastIndex(remote, ":")+1:])
	must(t, err)
	id = newMarker()
	log, done = startRsyncd(t, t.TempDir(), port, id)
	if line := waitVerdict(t, log, done, id); !strings.HasPrefix(line, id+" failed ") || !strings.Contains(log.String(), "Address already in use") {
		t.Errorf("a port another daemon has: %q\n%s", line, log.String())
	}
	src := t.TempDir()
	must(t, os.WriteFile(filepath.Join(src, "a"), []byte("a"), 0o600))
	cmd := exec.Command("sh", "-c", copyScript, "copy.sh", modeCopy, "MK")
	cmd.Env = append(os.Environ(), "SOURCE="+src, "REMOTE="+remote, "RSYNC_PASSWORD=pw", "DAEMON_ID="+id)
	done2 := make(chan []byte)
	go func() {
		out, _ := cmd.CombinedOutput() //nolint:errcheck // in its output
		done2 <- out
	}()
	// Its wait for its own daemon lasts a minute; what it did meanwhile is what matters.
	select {
	case out := <-done2:
		t.Errorf("the client of another daemon's ID ended: %s", out)
	case <-time.After(3 * time.Second):
		_ = cmd.Process.Kill() //nolint:errcheck // still waiting, as it should
		out := <-done2
		if strings.Contains(string(out), "MK stats") {
			t.Errorf("the client copied to a daemon of another run (ID %s, its own %s):\n%s", other, id, out)
		}
	}
}

// runRemote runs the client's script (copy.sh with REMOTE) from src to the daemon at remote.
func runRemote(t *testing.T, src, remote, id, password, mode string) (copyOutput, string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", copyScript, "copy.sh", mode, "MK")
	cmd.Env = append(os.Environ(), "SOURCE="+src, "REMOTE="+remote, "RSYNC_PASSWORD="+password, "DAEMON_ID="+id)
	out, _ := cmd.CombinedOutput() //nolint:errcheck // the script's status is in its output
	got, err := parseCopyOutput(string(out), "MK")
	must(t, err)
	return got, string(out)
}

// TestCopyScript_remote: the copy between nodes, with the machine's rsync on both ends: the first
// copy and the final pass through the daemon keep contents, owners, modes, an absolute symlink
// (rsync strips its "/" in a daemon without a chroot) and a hard link; the final verification
// compares by content on both ends and finds a file changed behind rsync's quick check (same
// size and time) on the target, which the pass by content then copies; a wrong password is
// refused.
func TestCopyScript_remote(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	remote, id := rsyncDaemon(t, dst)
	must(t, os.MkdirAll(filepath.Join(src, "d"), 0o750))
	must(t, os.WriteFile(filepath.Join(src, "d", "a"), []byte("aaaa"), 0o640))
	must(t, os.Chown(filepath.Join(src, "d", "a"), 1234, 5678))
	must(t, os.WriteFile(filepath.Join(src, "b"), make([]byte, 10000), 0o600))
	must(t, os.Symlink("/etc/hostname", filepath.Join(src, "abs")))
	must(t, os.Link(filepath.Join(src, "b"), filepath.Join(src, "b2")))
	if got, raw := runRemote(t, src, remote, id, "pw", modeCopy); got.Exit != 0 || !got.Ended || got.Files != 2 || got.Bytes != 10004 {
		t.Fatalf("copy: %+v\n%s", got, raw)
	}
	info, err := os.Stat(filepath.Join(src, "d", "a"))
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dst, "d", "a"), []byte("bbbb"), 0o640))
	must(t, os.Chtimes(filepath.Join(dst, "d", "a"), info.ModTime(), info.ModTime()))
	got, raw := runRemote(t, src, remote, id, "pw", modeFinal)
	if got.Exit != 0 || !got.Verified || len(got.Differs) != 0 || got.Files != 1 {
		t.Fatalf("final: %+v\n%s", got, raw)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "d", "a")); string(b) != "aaaa" { //nolint:errcheck // compared
		t.Errorf("the file changed on the target was not copied again: %q", b)
	}
	if l, err := os.Readlink(filepath.Join(dst, "abs")); err != nil || l != "/etc/hostname" {
		t.Errorf("the absolute symlink arrived as %q (%v)", l, err)
	}
	a, err := os.Stat(filepath.Join(dst, "d", "a"))
	must(t, err)
	if a.Mode().Perm() != 0o640 {
		t.Errorf("mode %v", a.Mode())
	}
	if out, err := exec.Command("stat", "-c", "%u:%g %h", filepath.Join(dst, "d", "a"), filepath.Join(dst, "b")).Output(); err != nil || string(out) != "1234:5678 1\n0:0 2\n" {
		t.Errorf("owners and links on the target: %q (%v)", out, err)
	}
	if got, raw := runRemote(t, src, remote, id, "wrong", modeFinal); got.Exit == 0 || !strings.Contains(raw, "auth failed") {
		t.Errorf("a wrong password: %+v\n%s", got, raw)
	}
}

func TestPlacement(t *testing.T) {
	for _, c := range []struct {
		pl    placement
		cross bool
	}{
		{placement{"n1", "n2"}, true},
		{placement{"n1", "n1"}, false},
		{placement{"", "n2"}, false},
		{placement{"n1", ""}, false},
	} {
		if got := c.pl.crossNode(); got != c.cross {
			t.Errorf("%+v: crossNode %t, want %t", c.pl, got, c.cross)
		}
	}
	for _, name := range []string{"a-copy-rsyncd", "b-final-rsyncd", strings.Repeat("x", 60)} {
		if p := daemonPort(name); p < daemonPortBase || p >= daemonPortBase+daemonPorts || p != daemonPort(name) || p != daemonPortAt(name, 0) {
			t.Errorf("daemonPort(%q) = %d", name, p)
		}
		// The tries after the first: ports of the range, the same every time, each another.
		seen := map[int32]bool{}
		for try := range daemonTries {
			p := daemonPortAt(name, try)
			if p < daemonPortBase || p >= daemonPortBase+daemonPorts || p != daemonPortAt(name, try) || seen[p] {
				t.Errorf("daemonPortAt(%q, %d) = %d (seen: %v)", name, try, p, seen)
			}
			seen[p] = true
		}
	}
}

// TestCrossNodePods: the daemon mounts the new claim and the Secret only, on the target node,
// with SYS_CHROOT and SETGID besides the copy pod's capabilities; the client mounts the source
// only, read-only, on the source node, the password from the Secret (never in the spec).
func TestCrossNodePods(t *testing.T) {
	m := &Migrator{Spec: Spec{Namespace: "app", Claim: "data", Image: "rsync:3"}}
	d := m.daemonPod("t-copy-rsyncd", "t", "t-rsync", "n2", 21000, "ID", 60)
	c := d.Spec.Containers[0]
	if args := c.Command[len(c.Command)-3:]; !slices.Equal(args, []string{"21000", secretsMount + "/" + secretKeySecrets, "ID"}) || d.Annotations[annotationDaemonPort] != "21000" {
		t.Errorf("daemon command %v, annotations %v", args, d.Annotations)
	}
	if len(c.Env) != 1 || c.Env[0].Name != "ADDRESS" || c.Env[0].ValueFrom.FieldRef.FieldPath != "status.podIP" {
		t.Errorf("daemon env (the address it listens on is its pod IP): %+v", c.Env)
	}
	if len(d.Spec.Volumes) != 2 || d.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "t" || d.Spec.Volumes[1].Secret.SecretName != "t-rsync" {
		t.Errorf("daemon volumes: %+v", d.Spec.Volumes)
	}
	if !slices.Contains(c.SecurityContext.Capabilities.Add, "SYS_CHROOT") || !slices.Contains(c.SecurityContext.Capabilities.Add, "SETGID") || *c.SecurityContext.AllowPrivilegeEscalation {
		t.Errorf("daemon security context: %+v", c.SecurityContext)
	}
	if v := d.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0].Values; !slices.Equal(v, []string{"n2"}) {
		t.Errorf("daemon on %v", v)
	}
	if d.Labels[labelComponent] != component || d.Annotations[AnnotationHeartbeat] == "" {
		t.Errorf("daemon labels %v annotations %v: the sweep would not find it", d.Labels, d.Annotations)
	}
	cl := m.clientPod("t-copy", modeCopy, "MK", "t", "t-rsync", "n1", "rsync://migrate@10.0.0.2:21000", "ID", 60)
	cc := cl.Spec.Containers[0]
	if len(cl.Spec.Volumes) != 1 || cl.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "data" || !cl.Spec.Volumes[0].PersistentVolumeClaim.ReadOnly || len(cc.VolumeMounts) != 1 || !cc.VolumeMounts[0].ReadOnly {
		t.Errorf("client volumes: %+v %+v", cl.Spec.Volumes, cc.VolumeMounts)
	}
	for _, e := range cc.Env {
		if e.Name == "RSYNC_PASSWORD" && (e.Value != "" || e.ValueFrom.SecretKeyRef.Name != "t-rsync") {
			t.Errorf("the password is not taken from the Secret: %+v", e)
		}
		if e.Name == "DAEMON_ID" && e.Value != "ID" {
			t.Errorf("the client checks the daemon's ID %q, want ID", e.Value)
		}
	}
}

// TestRollbackRemovesCrossNode: a rollback removes the daemon and client pods and the Secret of
// the migration, and leaves a Secret of that name that is not the migration's.
func TestRollbackRemovesCrossNode(t *testing.T) {
	p := progress{Phase: phaseCopying, Claim: "app/data", TargetClaim: "t"}
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "app"}}
	}
	ours := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "t-rsync", Namespace: "app",
		Labels: map[string]string{labelComponent: component, labelManagedBy: managedBy}, Annotations: map[string]string{AnnotationMigratedTo: "app/data"}}}
	claim := boundClaim("old")
	client := fake.NewClientset(pod("t-copy"), pod("t-copy-rsyncd"), pod("t-final-rsyncd"), ours, claim)
	m := &Migrator{Client: client, Spec: Spec{Namespace: "app", Claim: "data", StorageClass: "new"}}
	if err := m.rollback(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	pods, err := client.CoreV1().Pods("app").List(context.Background(), metav1.ListOptions{})
	must(t, err)
	if len(pods.Items) != 0 {
		t.Errorf("pods left: %v", pods.Items)
	}
	if _, err := client.CoreV1().Secrets("app").Get(context.Background(), "t-rsync", metav1.GetOptions{}); err == nil {
		t.Error("the migration's Secret is left")
	}
	theirs := ours.DeepCopy()
	theirs.Annotations = nil
	client = fake.NewClientset(theirs, claim)
	m.Client = client
	if err := m.rollback(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Secrets("app").Get(context.Background(), "t-rsync", metav1.GetOptions{}); err != nil {
		t.Errorf("a Secret that is not the migration's was deleted: %v", err)
	}
}

// TestCheckTargetNode: a target_node the cluster does not have is refused, naming the nodes it
// has; with one, the static class's room is read on that node, and the claim may stay on its
// class (a move between nodes).
func TestCheckTargetNode(t *testing.T) {
	in := input(func(in *planInput) {
		in.TargetNode, in.Nodes = "n9", []string{"n1", "n2"}
	})
	if err := Check(in); err == nil || !strings.Contains(err.Error(), `Node n9 not found: The cluster has no node "n9" to put the new volume on; its nodes are: n1, n2.`) {
		t.Errorf("missing node: %v", err)
	}
	in = input(func(in *planInput) {
		in.TargetNode, in.TargetNodeFound, in.SourceNode, in.Needed = "n2", true, "n1", 1<<30
		in.Room = &capacity.ClassCapacity{Name: "openebs-hostpath", Provisioner: "kubernetes.io/no-provisioner",
			Available:       &capacity.VolumeStats{Count: 2, LargestBytes: 2 << 30},
			AvailableByNode: map[string]capacity.VolumeStats{"n1": {Count: 2, LargestBytes: 2 << 30}}}
	})
	if err := Check(in); err == nil || !strings.Contains(err.Error(), "has no Available volume of at least 1Gi on node n2 (target_node)") {
		t.Errorf("no volume on the target node: %v", err)
	}
	in.Room.AvailableByNode["n2"] = capacity.VolumeStats{Count: 1, LargestBytes: 1 << 30}
	in.Claim = boundClaim("openebs-hostpath")
	if err := Check(in); err != nil {
		t.Errorf("a move to another node on the same class: %v", err)
	}
	in.TargetNode = "n1"
	if err := Check(in); err == nil || !strings.Contains(err.Error(), "already on StorageClass") {
		t.Errorf("the same class on the same node: %v", err)
	}
}

// TestMovesOn: a done record on a claim that stayed on its class is adopted, unless the run is a
// restore and the claim is not on the restore's volume, or target_node names another node than
// the one the claim's volume is on.
func TestMovesOn(t *testing.T) {
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"}, Spec: corev1.PersistentVolumeSpec{
		NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{"n2"}}},
		}}}}}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2", Labels: map[string]string{"kubernetes.io/hostname": "n2"}}}
	claim := boundClaim("local") // on pv-1
	for _, c := range []struct {
		spec Spec
		want bool
	}{
		{Spec{}, false},
		{Spec{TargetNode: "n2"}, false},
		{Spec{TargetNode: "n1"}, true},
		{Spec{Volume: "pv-1"}, false},
		{Spec{Volume: "pv-0"}, true},
	} {
		m := &Migrator{Client: fake.NewClientset(pv, node), Spec: c.spec}
		if got := m.movesOn(context.Background(), claim); got != c.want {
			t.Errorf("%+v: movesOn %t, want %t", c.spec, got, c.want)
		}
	}
}
