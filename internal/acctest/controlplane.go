package acctest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

// ControlPlane is the local cluster's own control plane (tools/kube/cluster.sh): its daemons run
// on this machine, each with a pidfile in run/ and a log in logs/ of the cluster's directory, so a
// fault test can restart or stall the real processes. Only for tests that hold the cluster alone.
type ControlPlane struct {
	dir string
}

// LocalControlPlane returns the control plane of the cluster Kubeconfig names; the test fails when
// that cluster's daemons are not this machine's (a kubeconfig for another cluster).
func LocalControlPlane(t testing.TB) ControlPlane {
	t.Helper()
	cp := ControlPlane{dir: filepath.Dir(Kubeconfig())}
	if _, err := cp.pid("kube-apiserver"); err != nil {
		t.Fatalf("the cluster of %s has no control plane on this machine (tools/kube/cluster.sh): %v", Kubeconfig(), err)
	}
	return cp
}

// pid is the running daemon's process id, from its pidfile.
func (cp ControlPlane) pid(component string) (int, error) {
	b, err := os.ReadFile(filepath.Join(cp.dir, "run", component+".pid"))
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("pidfile of %s: %w", component, err)
	}
	if err := syscall.Kill(pid, 0); err != nil {
		return 0, fmt.Errorf("%s (pid %d) is not running: %w", component, pid, err)
	}
	return pid, nil
}

// Restart stops the component as an administrator's restart does (SIGTERM, SIGKILL after 30 s)
// and starts it again with the same command line, environment and directory, as cluster.sh
// started it (its own session, output appended to its log, the pidfile rewritten); it returns once
// the API server answers /readyz again.
func (cp ControlPlane) Restart(t testing.TB, component string) {
	t.Helper()
	pid, err := cp.pid(component)
	if err != nil {
		t.Fatal(err)
	}
	proc := fmt.Sprintf("/proc/%d/", pid)
	cmdline, err := os.ReadFile(proc + "cmdline")
	if err != nil {
		t.Fatal(err)
	}
	environ, err := os.ReadFile(proc + "environ")
	if err != nil {
		t.Fatal(err)
	}
	cwd, err := os.Readlink(proc + "cwd")
	if err != nil {
		t.Fatal(err)
	}
	_ = syscall.Kill(pid, syscall.SIGTERM) //nolint:errcheck // gone already is as good
	for deadline := time.Now().Add(30 * time.Second); syscall.Kill(pid, 0) == nil; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL) //nolint:errcheck // it may end meanwhile
		}
	}
	log, err := os.OpenFile(filepath.Join(cp.dir, "logs", component+".log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close() //nolint:errcheck // the daemon holds its own descriptor
	argv := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	// The child writes its own pid before exec, as cluster.sh's start_daemon does.
	cmd := exec.Command("bash", append([]string{"-c", `echo $$ >"$0"; exec "$@"`, filepath.Join(cp.dir, "run", component+".pid")}, argv...)...)
	cmd.Env = strings.Split(strings.TrimRight(string(environ), "\x00"), "\x00")
	cmd.Dir, cmd.Stdout, cmd.Stderr = cwd, log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s again: %v", component, err)
	}
	go cmd.Wait() //nolint:errcheck // reaped when it ends; cluster.sh stops it by its pidfile
	cp.WaitReady(t, 2*time.Minute)
}

// Stall stops the component (SIGSTOP) for d, then lets it go on (SIGCONT): a process that is
// alive and holds its connections but answers nothing, as an etcd behind a stalled disk. The
// process is continued also when the test fails meanwhile.
func (cp ControlPlane) Stall(t testing.TB, component string, d time.Duration) {
	t.Helper()
	pid, err := cp.pid(component)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) }) //nolint:errcheck // continued already
	time.Sleep(d)
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
}

// WaitReady waits until the API server answers /readyz with ok.
func (cp ControlPlane) WaitReady(t testing.TB, timeout time.Duration) {
	t.Helper()
	client := Kube(t)
	err := kube.Poll(context.Background(), 200*time.Millisecond, timeout, "the API server to be ready", func(ctx context.Context) (bool, string, error) {
		body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			return kube.KeepPolling(err)
		}
		return bytes.Equal(bytes.TrimSpace(body), []byte("ok")), string(body), nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// DropSSH cuts every connection to the cluster's own sshd (node 1's, on this machine): each
// connection's processes are frozen, then killed, so no client hears a command end, as when the
// network fails. The listener stays, so clients can connect again. It returns how many
// connections it cut.
func (cp ControlPlane) DropSSH(t testing.TB) int {
	t.Helper()
	pid, err := cp.pid("sshd")
	if err != nil {
		t.Fatal(err)
	}
	conns, err := childrenOf(pid)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range conns {
		killTree(c)
	}
	return len(conns)
}
