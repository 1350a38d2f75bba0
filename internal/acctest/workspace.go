package acctest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

// Workspace is a Terraform working directory driven through the CLI under test with the
// provider built from this tree (DevCLI's dev_overrides), as a user runs it: for tests that
// interrupt the CLI, kill its provider or fault the cluster under it, which
// terraform-plugin-testing cannot.
type Workspace struct {
	cli, rc string
	// Dir is the working directory; main.tf holds the configuration.
	Dir string
}

// NewWorkspace makes a working directory whose configuration is main (after a required_providers
// block for this provider), run by cli with the CLI configuration rc (DevCLI's).
func NewWorkspace(t testing.TB, cli, rc, main string) *Workspace {
	t.Helper()
	w := &Workspace{cli: cli, rc: rc, Dir: t.TempDir()}
	w.Write(t, main)
	return w
}

// ExampleWorkspace makes a working directory holding the .tf files of the example directory
// examples/<name> (which declares its own required_providers), and, when override is not "",
// override.tf: what a test changes for the local cluster (chart repositories, images), merged
// into the example's blocks as Terraform's override files are.
func ExampleWorkspace(t testing.TB, cli, rc, name, override string) *Workspace {
	t.Helper()
	w := &Workspace{cli: cli, rc: rc, Dir: t.TempDir()}
	src := filepath.Join(RepoRoot(), "examples", name)
	files, err := filepath.Glob(filepath.Join(src, "*.tf"))
	if err != nil || len(files) == 0 {
		t.Fatalf("example %s: no .tf files (%v)", src, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(w.Dir, filepath.Base(f)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if override != "" {
		if err := os.WriteFile(filepath.Join(w.Dir, "override.tf"), []byte(override), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// Write makes main the workspace's configuration (after the required_providers block).
func (w *Workspace) Write(t testing.TB, main string) {
	t.Helper()
	main = `terraform {
  required_providers {
    clusterstorage = { source = "clusterstorage/clusterstorage" }
  }
}
` + main
	if err := os.WriteFile(filepath.Join(w.Dir, "main.tf"), []byte(main), 0o600); err != nil {
		t.Fatal(err)
	}
}

// CLIRun is one CLI command running in a process group of its own.
type CLIRun struct {
	cmd  *exec.Cmd
	out  SyncBuffer
	done chan error
}

// Start starts the CLI with args (-no-color added after the command, and -input=false to the
// commands that take it: not show, not query, which reject it); the test's cleanup kills it, with
// its provider, if it still runs.
func (w *Workspace) Start(t testing.TB, args ...string) *CLIRun {
	t.Helper()
	r := &CLIRun{done: make(chan error, 1)}
	// Right after the command: import takes its options before its two arguments.
	flags := []string{"-no-color"}
	if !noInputFlag[args[0]] {
		flags = append(flags, "-input=false")
	}
	args = append(append([]string{args[0]}, flags...), args[1:]...)
	r.cmd = exec.Command(w.cli, args...)
	r.cmd.Dir = w.Dir
	r.cmd.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+w.rc, "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1")
	r.cmd.Stdout, r.cmd.Stderr = &r.out, &r.out
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.done <- r.cmd.Wait() }()
	t.Cleanup(func() {
		select {
		case <-r.done: //nolint:errcheck // the test has looked at it, or failed
		default:
			_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL) //nolint:errcheck // the test already failed
			<-r.done                                              //nolint:errcheck // killed
		}
	})
	return r
}

// noInputFlag holds the commands that take no -input flag (`terraform query` of Terraform 1.14+
// fails with "flag provided but not defined: -input").
var noInputFlag = map[string]bool{"show": true, "query": true}

// Query runs `terraform query` (Terraform 1.14+) with args, e.g. -generate-config-out=generated.tf,
// to its end: its output and error.
func (w *Workspace) Query(t testing.TB, args ...string) (string, error) {
	t.Helper()
	return w.Exec(t, append([]string{"query"}, args...)...)
}

// Exec runs the CLI with args to its end (ten minutes at most): its output and error.
func (w *Workspace) Exec(t testing.TB, args ...string) (string, error) {
	t.Helper()
	r := w.Start(t, args...)
	err := r.Wait(t, 10*time.Minute)
	return r.Output(), err
}

// Output is what the command printed so far, standard output and error together.
func (r *CLIRun) Output() string { return r.out.String() }

// Wait waits up to timeout for the command and returns its error (nil: exit status 0); the test
// fails when it runs longer.
func (r *CLIRun) Wait(t testing.TB, timeout time.Duration) error {
	t.Helper()
	select {
	case err := <-r.done:
		r.done <- err
		return err
	case <-time.After(timeout):
		t.Fatalf("%s did not end within %s\n%s", strings.Join(r.cmd.Args, " "), timeout, r.Output())
		return nil
	}
}

// Ended is whether the command has ended.
func (r *CLIRun) Ended() bool {
	select {
	case err := <-r.done:
		r.done <- err
		return true
	default:
		return false
	}
}

// WaitFor polls cond until it holds, failing the test when the command ends first or time runs
// out.
func (r *CLIRun) WaitFor(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	err := kube.Poll(context.Background(), 100*time.Millisecond, timeout, what, func(context.Context) (bool, string, error) {
		if r.Ended() {
			return false, "", fmt.Errorf("%s ended before %s: %v\n%s", r.cmd.Args[0], what, r.Wait(t, 0), r.Output())
		}
		return cond(), "", nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Signal sends sig to the CLI alone (SIGINT: a user's Ctrl-C).
func (r *CLIRun) Signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	if err := r.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// KillProvider sends SIGKILL to the provider the command runs (not to the CLI, which reports the
// loss and saves what it knows).
func (r *CLIRun) KillProvider(t testing.TB) {
	t.Helper()
	children, err := childrenOf(r.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	for _, pid := range children {
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if err != nil || !strings.HasPrefix(filepath.Base(exe), "terraform-provider-clusterstorage") {
			continue
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("killing the provider %d: %v", pid, err)
		}
		return
	}
	t.Fatalf("%s runs no provider\n%s", strings.Join(r.cmd.Args, " "), r.Output())
}

// Kill sends SIGKILL to the CLI and everything in its process group (the provider with it).
func (r *CLIRun) Kill(t testing.TB) {
	t.Helper()
	if err := syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
}
