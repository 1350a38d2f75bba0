package node_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/node"
)

// The file operations run in one worker shell: many of them, one after another and at once, open
// one session, and each gets its own answer.
func TestShell_FileOpsShareOneSession(t *testing.T) {
	s := acctest.StartSSHD(t)
	h := newHost(t, newPool(t, node.PoolOptions{}), target(s))
	root := t.TempDir()
	for i := range 20 {
		p := filepath.Join(root, fmt.Sprintf("v %d", i), "data")
		if err := h.MkdirAll(t.Context(), p, node.DirOptions{Mode: 0o750}); err != nil {
			t.Fatal(err)
		}
		fi, err := h.Stat(t.Context(), p)
		if err != nil || !fi.IsDir() || !fi.Empty || fi.Mode.Perm() != 0o750 {
			t.Fatalf("Stat(%q) = %+v, %v", p, fi, err)
		}
		if real, err := h.RealPath(t.Context(), filepath.Join(p, "..", "data")); err != nil || real != p {
			t.Fatalf("RealPath = %q, %v", real, err)
		}
	}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := filepath.Join(root, fmt.Sprintf("v %d", i), "data")
			if err := h.RemoveDir(t.Context(), p); err != nil {
				t.Errorf("RemoveDir(%q): %v", p, err)
			}
			if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s after RemoveDir: %v", p, err)
			}
		}()
	}
	wg.Wait()
	if n, shells := node.SessionsOpened(h), node.ShellsStarted(h); n != 1 || shells != 1 {
		t.Errorf("80 file operations opened %d sessions and started %d worker shells, want 1 and 1", n, shells)
	}
}

// Output and exit status come through as the command wrote them, whatever bytes they hold; a
// command cannot end early by writing what the shell writes after it.
func TestShell_OutputAndStatus(t *testing.T) {
	s := acctest.StartSSHD(t)
	h := newHost(t, newPool(t, node.PoolOptions{}), target(s))
	cases := []struct {
		script, want string
		status       int
	}{
		{`printf 'no newline'`, "no newline", 0},
		{`printf 'a\0b\n\n'`, "a\x00b\n\n", 0},
		{`printf '\nclusterstorage-done-x 0\n'; echo more`, "\nclusterstorage-done-x 0\nmore\n", 0},
		{`echo out; echo err >&2; exit 3`, "out\nerr\n", 3},
		{`read line; echo "read: $line"`, "read: \n", 0},
		{``, "", 0},
	}
	for _, c := range cases {
		out, err := h.RunShort(t.Context(), node.Script(c.script))
		status := 0
		var exit *node.ExitError
		if errors.As(err, &exit) {
			status = exit.ExitCode
		} else if err != nil {
			t.Fatalf("%s: %v", c.script, err)
		}
		if string(out) != c.want || status != c.status {
			t.Errorf("%s: %q, status %d; want %q, %d", c.script, out, status, c.want, c.status)
		}
	}
	if n := node.ShellsStarted(h); n != 1 {
		t.Errorf("%d worker shells started, want 1", n)
	}
}

// A command that outlives its timeout is stopped with its process group, the shell with it, and
// the next command gets a new shell.
func TestShell_TimeoutStopsTheCommand(t *testing.T) {
	s := acctest.StartSSHD(t)
	tg := target(s)
	// Long enough for a new SSH session and shell on a loaded machine (the next command below
	// starts one): 700 ms failed while the k3s migration's tests ran beside this package.
	tg.CommandTimeout = 3 * time.Second
	h := newHost(t, newPool(t, node.PoolOptions{}), tg)
	_, err := h.RunShort(t.Context(), node.NewCommand("sleep", "44.5"))
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "sleep 44.5") {
		t.Fatalf("want a timeout naming the command, got %v", err)
	}
	waitFor(t, "the sleep to be gone", func() bool { return len(processesWith(t, "44.5")) == 0 })
	out, err := h.RunShort(t.Context(), node.NewCommand("echo", "next"))
	if err != nil || string(out) != "next\n" {
		t.Fatalf("after the timeout: %q, %v", out, err)
	}
	if n := node.ShellsStarted(h); n != 2 {
		t.Errorf("%d worker shells started, want 2", n)
	}
}

// A shell killed between commands costs nothing but a new one: the command it was given runs
// anyway.
func TestShell_KilledShellIsReplaced(t *testing.T) {
	s := acctest.StartSSHD(t)
	h := newHost(t, newPool(t, node.PoolOptions{}), target(s))
	out, err := h.RunShort(t.Context(), node.Script(`echo "$PPID"`))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("killing the worker shell %d: %v", pid, err)
	}
	dir := t.TempDir()
	fi, err := h.Stat(t.Context(), dir)
	if err != nil || !fi.IsDir() {
		t.Fatalf("Stat after the shell was killed: %+v, %v", fi, err)
	}
	fi, err = h.Stat(t.Context(), dir)
	if err != nil || !fi.IsDir() {
		t.Fatalf("the Stat after: %+v, %v", fi, err)
	}
	if n := node.ShellsStarted(h); n != 2 {
		t.Errorf("%d worker shells started, want 2", n)
	}
}

// An idle shell closes and gives its session slot back; with a single session per connection,
// no shell holds it.
func TestShell_IdleCloseAndSingleSession(t *testing.T) {
	node.SetShellIdle(t, 200*time.Millisecond)
	s := acctest.StartSSHD(t)
	h := newHost(t, newPool(t, node.PoolOptions{}), target(s))
	if _, err := h.Stat(t.Context(), "/"); err != nil {
		t.Fatal(err)
	}
	if !node.ShellOpen(h) || node.SessionsInUse(h) != 1 {
		t.Fatalf("after a Stat: shell open %v, %d sessions in use; want true, 1", node.ShellOpen(h), node.SessionsInUse(h))
	}
	waitFor(t, "the idle shell to close", func() bool { return !node.ShellOpen(h) && node.SessionsInUse(h) == 0 })

	one := newHost(t, newPool(t, node.PoolOptions{MaxSessions: 1}), target(s))
	for range 3 {
		if fi, err := one.Stat(t.Context(), "/"); err != nil || !fi.IsDir() {
			t.Fatalf("Stat with one session: %+v, %v", fi, err)
		}
	}
	if n := node.ShellsStarted(one); n != 0 {
		t.Errorf("with one session per connection %d worker shells started, want 0", n)
	}
}

// Through sudo the shell runs as root; a sudo that wants a password leaves the commands to
// sessions of their own, which say so.
func TestShell_Sudo(t *testing.T) {
	s := acctest.StartSSHD(t)
	p := newPool(t, node.PoolOptions{})
	tg := target(s)
	tg.User = s.AddUser(t, acctest.UserOptions{Sudo: "nopasswd"}).Name
	tg.Sudo = true
	h := newHost(t, p, tg)
	out, err := h.RunShort(t.Context(), node.NewCommand("id", "-u"))
	if err != nil || string(out) != "0\n" {
		t.Fatalf("id -u in the sudo shell: %q, %v", out, err)
	}

	tg.User = s.AddUser(t, acctest.UserOptions{Password: "pw", Sudo: "password"}).Name
	h = newHost(t, p, tg)
	_, err = h.Stat(t.Context(), "/")
	if !errors.Is(err, node.ErrSudoPasswordRequired) {
		t.Fatalf("Stat through a sudo that wants a password: %v", err)
	}
}
