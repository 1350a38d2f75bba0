package node_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/testenv"

	"golang.org/x/crypto/ssh"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/node"
)

// target returns a target logging in to s with its client key, checking its known_hosts.
func target(s *acctest.SSHD) node.Target {
	return node.Target{Endpoint: node.Endpoint{
		Host:    s.Host,
		Port:    s.Port,
		User:    s.User,
		Auth:    node.Auth{PrivateKey: s.ClientKeyPEM},
		HostKey: node.HostKeyPolicy{KnownHostsFile: s.KnownHostsPath},
	}}
}

func newPool(t *testing.T, opts node.PoolOptions) *node.Pool {
	t.Helper()
	p := node.NewPool(opts)
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("closing the pool: %v", err)
		}
	})
	return p
}

func newHost(t *testing.T, p *node.Pool, tg node.Target) *node.Host {
	t.Helper()
	h, err := p.Host(tg)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	const timeout = 5 * time.Second
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// processesWith returns the pids of all processes on this machine whose command line contains
// marker: not only those below sshd, since a process whose parent was killed moves to init.
func processesWith(t *testing.T, marker string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmdline, []byte(marker)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func TestRun_OutputExitCodeAndErrors(t *testing.T) {
	s := acctest.StartSSHD(t)
	h := newHost(t, newPool(t, node.PoolOptions{}), target(s))
	ctx := t.Context()

	res, err := h.Run(ctx, node.Script(`echo out "$1"; echo err >&2`, "a b"))
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Stdout) != "out a b\n" || string(res.Stderr) != "err\n" || res.ExitCode != 0 {
		t.Errorf("result = %q %q %d", res.Stdout, res.Stderr, res.ExitCode)
	}

	res, err = h.Run(ctx, node.Script(`echo partial; echo "  first line" >&2; echo "$1" >&2; exit 3`, "boom"))
	var exitErr *node.ExitError
	if !errors.As(err, &exitErr) {
		t.Fatalf("want *node.ExitError, got %T: %v", err, err)
	}
	if exitErr.ExitCode != 3 || res.ExitCode != 3 || exitErr.Stderr != "first line\nboom" || string(res.Stdout) != "partial\n" {
		t.Errorf("exit error = %+v, result = %+v", exitErr, res)
	}
	wantMsg := fmt.Sprintf("command sh -c 'echo partial; echo \"  first line\" >&2; echo \"$1\" >&2; exit 3' sh boom on %s@%s exited with status 3: first line\nboom", s.User, s.Addr())
	if err.Error() != wantMsg {
		t.Errorf("error message\n got: %s\nwant: %s", err, wantMsg)
	}

	_, err = h.Run(ctx, node.NewCommand("/nonexistent/program"))
	if !errors.As(err, &exitErr) || exitErr.ExitCode != 127 || !strings.Contains(exitErr.Stderr, "/nonexistent/program") {
		t.Errorf("missing program: %v", err)
	}

	_, err = h.Run(ctx, node.NewCommand("sh", "-c", "kill -KILL $$"))
	if !errors.As(err, &exitErr) || exitErr.Signal != "KILL" || exitErr.ExitCode != -1 {
		t.Errorf("killed command: %v", err)
	}
	if err != nil && !strings.Contains(err.Error(), "was killed by signal KILL") {
		t.Errorf("killed command message: %v", err)
	}
}

func TestExec_StdinAndStreaming(t *testing.T) {
	s := acctest.StartSSHD(t)
	h := newHost(t, newPool(t, node.PoolOptions{}), target(s))

	data := make([]byte, 3<<20)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	var streamed bytes.Buffer
	res, err := h.Exec(t.Context(), node.NewCommand("cat"), node.ExecOptions{Stdin: bytes.NewReader(data), Stdout: &streamed})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(res.Stdout, data) || !bytes.Equal(streamed.Bytes(), data) {
		t.Errorf("cat returned %d bytes (streamed %d), want the %d sent", len(res.Stdout), streamed.Len(), len(data))
	}

	// Without stdin a command reading it sees EOF instead of hanging.
	res, err = h.Run(t.Context(), node.NewCommand("wc", "-c"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(res.Stdout)) != "0" {
		t.Errorf("wc -c without stdin printed %q", res.Stdout)
	}

	// A command that ignores a large stdin finishes normally.
	if _, err := h.Exec(t.Context(), node.NewCommand("true"), node.ExecOptions{Stdin: bytes.NewReader(data)}); err != nil {
		t.Errorf("command ignoring stdin: %v", err)
	}
}

// TestQuoteThroughSSH sends strings that break naive quoting through sshd and the remote login
// shell, and checks every byte comes back.
func TestQuoteThroughSSH(t *testing.T) {
	s := acctest.StartSSHD(t)
	h := newHost(t, newPool(t, node.PoolOptions{}), target(s))
	args := []string{
		"", " ", "'", `"`, `\`, `'\''`, "$HOME", "$(id)", "`id`", "a;b", "a|b", "*", "~", "#x", "!",
		"a=b", "-n", "--", "\n", "a\nb", "\t", "%s", "é", "\xff\xfe", "{a,b}", "a b\tc",
	}
	res, err := h.Run(t.Context(), node.NewCommand("printf", `%s\0`).Arg(args...))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join(args, "\x00") + "\x00"
	if string(res.Stdout) != want {
		t.Errorf("arguments came back as %q, want %q", res.Stdout, want)
	}

	_, err = h.Run(t.Context(), node.NewCommand("echo", "a\x00b"))
	if !errors.Is(err, node.ErrNUL) {
		t.Errorf("NUL argument: got %v, want ErrNUL", err)
	}
}

func TestExec_TimeoutKillsTheCommand(t *testing.T) {
	s := acctest.StartSSHD(t)
	tg := target(s)
	tg.CommandTimeout = 500 * time.Millisecond
	h := newHost(t, newPool(t, node.PoolOptions{}), tg)

	start := time.Now()
	res, err := h.Run(t.Context(), node.NewCommand("sleep", "31.25"))
	elapsed := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "timed out after 500ms") {
		t.Fatalf("want a timeout error, got %v", err)
	}
	if res == nil || res.ExitCode != -1 {
		t.Errorf("result of a timed out command: %+v", res)
	}
	if elapsed > 5*time.Second {
		t.Errorf("a 500ms timeout took %s to return", elapsed)
	}
	waitFor(t, "the timed out sleep to be gone", func() bool {
		return len(processesWith(t, "31.25")) == 0
	})

	// Processes a script started are stopped too: the whole process group is killed.
	_, err = h.Run(t.Context(), node.Script(`sleep 34.25; echo never`))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want a timeout, got %v", err)
	}
	waitFor(t, "the script's sleep to be gone", func() bool {
		return len(processesWith(t, "34.25")) == 0
	})

	// The per-call timeout overrides the target's.
	if _, err := h.Exec(t.Context(), node.NewCommand("sleep", "1"), node.ExecOptions{Timeout: 10 * time.Second}); err != nil {
		t.Errorf("per-call timeout: %v", err)
	}
}

// TestExec_DefaultTimeout: a command that nothing bounds (no timeout of its own or the target's,
// a context without a deadline, as in a Terraform Read) still has one, and its error names the
// node and the command; a context deadline replaces the default.
func TestExec_DefaultTimeout(t *testing.T) {
	s := acctest.StartSSHD(t)
	tg := target(s)
	tg.Node = "worker-1"
	h := newHost(t, newPool(t, node.PoolOptions{DefaultCommandTimeout: time.Second}), tg)

	start := time.Now()
	_, err := h.Run(t.Context(), node.NewCommand("sleep", "29.5"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want a timeout, got %v", err)
	}
	for _, want := range []string{`command sleep 29.5 on node "worker-1" (` + s.User + "@" + s.Addr() + ")", "timed out after 1s", "default limit"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Errorf("a 1s default took %s to return", elapsed)
	}
	waitFor(t, "the timed out sleep to be gone", func() bool {
		return len(processesWith(t, "29.5")) == 0
	})

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := h.Run(ctx, node.NewCommand("sleep", "1.5")); err != nil {
		t.Errorf("a command within its context's deadline: %v", err)
	}
}

func TestExec_CancelKillsTheCommand(t *testing.T) {
	s := acctest.StartSSHD(t)
	h := newHost(t, newPool(t, node.PoolOptions{}), target(s))

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		// Cancel once the command is seen running on the server.
		deadline := time.Now().Add(10 * time.Second)
		for len(processesWith(t, "32.75")) == 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
	}()
	_, err := h.Run(ctx, node.NewCommand("sleep", "32.75"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
	waitFor(t, "the cancelled sleep to be gone", func() bool {
		return len(processesWith(t, "32.75")) == 0
	})
	// The connection is still good.
	if _, err := h.Run(t.Context(), node.NewCommand("true")); err != nil {
		t.Fatal(err)
	}
}

func TestHostKey_Mismatch(t *testing.T) {
	s := acctest.StartSSHD(t)
	otherKey := newPublicKey(t)
	known := filepath.Join(t.TempDir(), "known_hosts")
	line := fmt.Sprintf("[%s]:%d %s\n", s.Host, s.Port, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(otherKey))))
	if err := os.WriteFile(known, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	tg := target(s)
	tg.HostKey.KnownHostsFile = known
	p := newPool(t, node.PoolOptions{})
	_, err := newHost(t, p, tg).Run(t.Context(), node.NewCommand("true"))

	var hkErr *node.HostKeyError
	if !errors.As(err, &hkErr) {
		t.Fatalf("want *node.HostKeyError, got %T: %v", err, err)
	}
	serverKey := parseKey(t, s.HostPublicKey)
	for _, want := range []string{
		"host key MISMATCH for " + s.Addr(),
		"presented ssh-ed25519 " + ssh.FingerprintSHA256(serverKey),
		"known_hosts file " + known + " expects ssh-ed25519 " + ssh.FingerprintSHA256(otherKey) + " (" + known + ":1)",
		"intercepting",
		fmt.Sprintf("ssh-keygen -R '[%s]:%d' -f %s", s.Host, s.Port, known),
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not contain %q:\n%v", want, err)
		}
	}
	if hkErr.Unknown {
		t.Error("a mismatch reported as an unknown host")
	}
}

func TestHostKey_UnknownHostAndMissingFile(t *testing.T) {
	s := acctest.StartSSHD(t)
	dir := t.TempDir()
	empty := filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(empty, []byte("[other.example]:22 "+s.HostPublicKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, file := range map[string]string{"unknown host": empty, "missing file": filepath.Join(dir, "absent")} {
		t.Run(name, func(t *testing.T) {
			tg := target(s)
			tg.HostKey.KnownHostsFile = file
			_, err := newHost(t, newPool(t, node.PoolOptions{}), tg).Run(t.Context(), node.NewCommand("true"))
			var hkErr *node.HostKeyError
			if !errors.As(err, &hkErr) || !hkErr.Unknown {
				t.Fatalf("want an unknown-host *node.HostKeyError, got %T: %v", err, err)
			}
			// With no key known the server offers whichever of its keys it likes.
			presented := false
			for _, line := range s.HostPublicKeys {
				key := parseKey(t, line)
				presented = presented || strings.Contains(err.Error(), "presented "+key.Type()+" "+ssh.FingerprintSHA256(key))
			}
			if !presented {
				t.Errorf("error does not show the presented key's fingerprint:\n%v", err)
			}
			for _, want := range []string{"host key verification failed for " + s.Addr(), "known_hosts file " + file,
				fmt.Sprintf("ssh-keyscan -p %d %s >> %s", s.Port, s.Host, file)} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error does not contain %q:\n%v", want, err)
				}
			}
		})
	}
}

// TestHostKey_NegotiatesTheKnownAlgorithm: the server has ed25519 and ecdsa host keys and prefers
// ed25519; a known_hosts file or pin holding only the ecdsa key must still verify.
func TestHostKey_NegotiatesTheKnownAlgorithm(t *testing.T) {
	s := acctest.StartSSHD(t)
	ecdsaLine := s.HostPublicKeys[1]
	if !strings.HasPrefix(ecdsaLine, "ecdsa-") {
		t.Fatalf("second host key is %q, want ecdsa", ecdsaLine)
	}
	known := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(known, []byte(fmt.Sprintf("[%s]:%d %s\n", s.Host, s.Port, ecdsaLine)), 0o600); err != nil {
		t.Fatal(err)
	}
	p := newPool(t, node.PoolOptions{})

	tg := target(s)
	tg.HostKey.KnownHostsFile = known
	if _, err := newHost(t, p, tg).Run(t.Context(), node.NewCommand("true")); err != nil {
		t.Errorf("known_hosts with only the ecdsa key: %v", err)
	}

	tg.HostKey = node.HostKeyPolicy{PinnedKeys: ecdsaLine + " comment\n"}
	if _, err := newHost(t, p, tg).Run(t.Context(), node.NewCommand("true")); err != nil {
		t.Errorf("pinned ecdsa key: %v", err)
	}
}

func TestHostKey_PinnedAndInsecure(t *testing.T) {
	s := acctest.StartSSHD(t)
	p := newPool(t, node.PoolOptions{})

	tg := target(s)
	tg.HostKey = node.HostKeyPolicy{PinnedKeys: s.HostPublicKey}
	if _, err := newHost(t, p, tg).Run(t.Context(), node.NewCommand("true")); err != nil {
		t.Errorf("pinned key: %v", err)
	}

	wrong := newPublicKey(t)
	tg.HostKey = node.HostKeyPolicy{PinnedKeys: string(ssh.MarshalAuthorizedKey(wrong))}
	_, err := newHost(t, p, tg).Run(t.Context(), node.NewCommand("true"))
	if err == nil || !strings.Contains(err.Error(), "host key MISMATCH for "+s.Addr()) ||
		!strings.Contains(err.Error(), "the pinned host key expects ssh-ed25519 "+ssh.FingerprintSHA256(wrong)) {
		t.Errorf("wrong pinned key: %v", err)
	}

	tg.HostKey = node.HostKeyPolicy{InsecureIgnoreHostKey: true}
	if _, err := newHost(t, p, tg).Run(t.Context(), node.NewCommand("true")); err != nil {
		t.Errorf("insecure: %v", err)
	}
}

func TestAuth_WrongKeyIsRefusedClearly(t *testing.T) {
	s := acctest.StartSSHD(t)
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	tg := target(s)
	tg.Auth = node.Auth{PrivateKey: string(pem.EncodeToMemory(block))}
	p := newPool(t, node.PoolOptions{})
	_, err = newHost(t, p, tg).Run(t.Context(), node.NewCommand("true"))
	var authErr *node.AuthError
	if !errors.As(err, &authErr) {
		t.Fatalf("want *node.AuthError, got %T: %v", err, err)
	}
	for _, want := range []string{"SSH authentication as " + s.User + "@" + s.Addr() + " failed", "configured: inline private key", "authorized_keys"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not contain %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "PRIVATE KEY") {
		t.Errorf("error shows the key: %v", err)
	}
}

func TestAuth_KeyFileWithPassphrase(t *testing.T) {
	s := acctest.StartSSHD(t)
	keyFile := filepath.Join(t.TempDir(), "id")
	if err := os.WriteFile(keyFile, []byte(s.ClientKeyPEM), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("ssh-keygen", "-q", "-p", "-N", "s3cret", "-f", keyFile).CombinedOutput(); err != nil {
		t.Fatalf("encrypting the key: %v: %s", err, out)
	}
	p := newPool(t, node.PoolOptions{})
	tg := target(s)

	tg.Auth = node.Auth{PrivateKeyFile: keyFile}
	_, err := newHost(t, p, tg).Run(t.Context(), node.NewCommand("true"))
	if err == nil || !strings.Contains(err.Error(), "private key file "+keyFile+" is encrypted: set its passphrase") {
		t.Errorf("encrypted key without passphrase: %v", err)
	}

	tg.Auth = node.Auth{PrivateKeyFile: keyFile, Passphrase: "wrong"}
	_, err = newHost(t, p, tg).Run(t.Context(), node.NewCommand("true"))
	if err == nil || !strings.Contains(err.Error(), "is the passphrase right?") || strings.Contains(err.Error(), "wrong") {
		t.Errorf("wrong passphrase: %v", err)
	}

	tg.Auth = node.Auth{PrivateKeyFile: keyFile, Passphrase: "s3cret"}
	if _, err := newHost(t, p, tg).Run(t.Context(), node.NewCommand("true")); err != nil {
		t.Errorf("right passphrase: %v", err)
	}
	if p.Handshakes() != 1 {
		t.Errorf("handshakes = %d, want 1 (key errors are found before connecting)", p.Handshakes())
	}
}

func TestAuth_Agent(t *testing.T) {
	s := acctest.StartSSHD(t)
	testenv.LookPath(t, "ssh-agent")
	sock := filepath.Join(t.TempDir(), "agent.sock")
	agentCmd := exec.Command("ssh-agent", "-D", "-a", sock)
	if err := agentCmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := agentCmd.Process.Kill(); err != nil {
			t.Logf("stopping ssh-agent: %v", err)
		}
		_ = agentCmd.Wait() //nolint:errcheck // killed on purpose.
	})
	waitFor(t, "ssh-agent's socket", func() bool {
		_, err := os.Stat(sock)
		return err == nil
	})
	add := exec.Command("ssh-add", s.ClientKeyPath)
	add.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatalf("ssh-add: %v: %s", err, out)
	}

	t.Setenv("SSH_AUTH_SOCK", sock)
	tg := target(s)
	tg.Auth = node.Auth{Agent: true}
	res, err := newHost(t, newPool(t, node.PoolOptions{}), tg).Run(t.Context(), node.NewCommand("echo", "agent"))
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Stdout) != "agent\n" {
		t.Errorf("stdout %q", res.Stdout)
	}

	t.Setenv("SSH_AUTH_SOCK", "")
	_, err = newHost(t, newPool(t, node.PoolOptions{}), tg).Run(t.Context(), node.NewCommand("true"))
	if err == nil || !strings.Contains(err.Error(), "SSH_AUTH_SOCK is not set") {
		t.Errorf("agent without socket: %v", err)
	}
}

func TestAuth_Password(t *testing.T) {
	s := acctest.StartSSHDWith(t, acctest.SSHDOptions{PasswordAuthentication: true})
	u := s.AddUser(t, acctest.UserOptions{Password: "correct horse"})
	p := newPool(t, node.PoolOptions{})
	tg := target(s)
	tg.User = u.Name
	tg.Auth = node.Auth{Password: u.Password}
	res, err := newHost(t, p, tg).Run(t.Context(), node.NewCommand("id", "-un"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(res.Stdout)) != u.Name {
		t.Errorf("logged in as %q, want %q", res.Stdout, u.Name)
	}

	tg.Auth = node.Auth{Password: "wrong horse"}
	_, err = newHost(t, p, tg).Run(t.Context(), node.NewCommand("true"))
	var authErr *node.AuthError
	if !errors.As(err, &authErr) || strings.Contains(err.Error(), "wrong horse") || !strings.Contains(err.Error(), "configured: password") {
		t.Errorf("wrong password: %v", err)
	}
}

func TestSudo(t *testing.T) {
	s := acctest.StartSSHD(t)
	u := s.AddUser(t, acctest.UserOptions{Sudo: "nopasswd"})
	p := newPool(t, node.PoolOptions{})
	tg := target(s)
	tg.User = u.Name

	res, err := newHost(t, p, tg).Run(t.Context(), node.NewCommand("id", "-u"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(res.Stdout)) == "0" {
		t.Fatal("without sudo the command ran as root")
	}

	tg.Sudo = true
	h := newHost(t, p, tg)
	res, err = h.Run(t.Context(), node.NewCommand("id", "-u"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(res.Stdout)); got != "0" || res.Command != "sudo -n -- id -u" {
		t.Errorf("with sudo: uid %q, command %q", got, res.Command)
	}

	// Helpers work through sudo: a directory only root may make, owned by the login user.
	dir := filepath.Join(t.TempDir(), "sudo made")
	if err := h.MkdirAll(t.Context(), dir, node.DirOptions{Mode: 0o750, Owner: u.Name, Group: "0"}); err != nil {
		t.Fatal(err)
	}
	fi, err := h.Stat(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.IsDir() || fi.Mode.Perm() != 0o750 || fi.UID == 0 || fi.GID != 0 {
		t.Errorf("directory made through sudo: %+v", fi)
	}

	// Cancelling a command run through sudo kills it too (sudo passes the signal on).
	tg.CommandTimeout = 500 * time.Millisecond
	_, err = newHost(t, p, tg).Run(t.Context(), node.NewCommand("sleep", "33.5"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want a timeout, got %v", err)
	}
	waitFor(t, "the sudo sleep to be gone", func() bool {
		return len(processesWith(t, "33.5")) == 0
	})
}

func TestSudo_PasswordRequired(t *testing.T) {
	s := acctest.StartSSHD(t)
	u := s.AddUser(t, acctest.UserOptions{Password: "pw", Sudo: "password"})
	tg := target(s)
	tg.User = u.Name
	tg.Sudo = true
	_, err := newHost(t, newPool(t, node.PoolOptions{}), tg).Run(t.Context(), node.NewCommand("true"))
	if !errors.Is(err, node.ErrSudoPasswordRequired) {
		t.Fatalf("want ErrSudoPasswordRequired, got %v", err)
	}
	for _, want := range []string{"sudo: a password is required", "NOPASSWD", u.Name + " ALL=(ALL) NOPASSWD: ALL", "or connect as root"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not contain %q:\n%v", want, err)
		}
	}
}

// TestPool_ConcurrentCallersShareOneHandshake: 30 callers at once on one host make one
// connection, and the session limit keeps sshd's MaxSessions (10) from refusing any of them.
func TestPool_ConcurrentCallersShareOneHandshake(t *testing.T) {
	s := acctest.StartSSHD(t)
	p := newPool(t, node.PoolOptions{})
	tg := target(s)

	var wg sync.WaitGroup
	var failures atomic.Int32
	start := make(chan struct{})
	for i := range 30 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each caller makes its own Host, as separate resources would.
			h, err := p.Host(tg)
			if err != nil {
				t.Error(err)
				return
			}
			<-start
			res, err := h.Run(t.Context(), node.NewCommand("sh", "-c", `sleep 0.2; echo "$1"`, "sh", strconv.Itoa(i)))
			if err != nil {
				failures.Add(1)
				t.Errorf("caller %d: %v", i, err)
				return
			}
			if got := strings.TrimSpace(string(res.Stdout)); got != strconv.Itoa(i) {
				t.Errorf("caller %d got %q", i, got)
			}
		}()
	}
	close(start)
	wg.Wait()
	if got := p.Handshakes(); got != 1 {
		t.Errorf("30 concurrent callers made %d handshakes, want 1", got)
	}
	if got := len(s.ConnectionPIDs(t)); got != 1 {
		t.Errorf("sshd serves %d connections, want 1", got)
	}
}

func TestPool_ReconnectsAfterTheServerDropsTheConnection(t *testing.T) {
	s := acctest.StartSSHD(t)
	p := newPool(t, node.PoolOptions{})
	h := newHost(t, p, target(s))
	if _, err := h.Run(t.Context(), node.NewCommand("true")); err != nil {
		t.Fatal(err)
	}
	s.DropConnections(t)
	res, err := h.Run(t.Context(), node.NewCommand("echo", "again"))
	if err != nil {
		t.Fatalf("after the server dropped the connection: %v", err)
	}
	if string(res.Stdout) != "again\n" {
		t.Errorf("stdout %q", res.Stdout)
	}
	if got := p.Handshakes(); got != 2 {
		t.Errorf("handshakes = %d, want 2", got)
	}
}

// A command whose connection the server drops while it runs fails with ErrConnectionLost (callers
// retry only what may run twice on it), and the next command reconnects.
func TestRun_ConnectionLostWhileTheCommandRuns(t *testing.T) {
	s := acctest.StartSSHD(t)
	h := newHost(t, newPool(t, node.PoolOptions{}), target(s))
	marker := fmt.Sprintf("clusterstorage-lost-%d", time.Now().UnixNano())
	failed := make(chan error, 1)
	go func() {
		_, err := h.Run(t.Context(), node.Script(`sleep 30; : "$1"`, marker))
		failed <- err
	}()
	waitFor(t, "the command to run", func() bool { return len(processesWith(t, marker)) > 0 })
	s.DropConnections(t)
	select {
	case err := <-failed:
		if !errors.Is(err, node.ErrConnectionLost) {
			t.Errorf("want ErrConnectionLost, got %v", err)
		}
		if err != nil && !strings.Contains(err.Error(), "the connection was lost before it finished (it may still run)") {
			t.Errorf("message: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the command did not fail within 10s of its connection being dropped")
	}
	if _, err := h.Run(t.Context(), node.NewCommand("true")); err != nil {
		t.Fatalf("after the connection was lost: %v", err)
	}
	if _, err := h.Run(t.Context(), node.NewCommand("false")); errors.Is(err, node.ErrConnectionLost) {
		t.Errorf("a command that exits 1 is reported as a lost connection: %v", err)
	}
}

// TestPool_KeepaliveClosesAHungConnection freezes the server side of the connection: keepalives
// go unanswered, the pool closes the connection, and the next command reconnects.
func TestPool_KeepaliveClosesAHungConnection(t *testing.T) {
	s := acctest.StartSSHD(t)
	p := newPool(t, node.PoolOptions{KeepaliveInterval: 100 * time.Millisecond, KeepaliveTimeout: 300 * time.Millisecond})
	h := newHost(t, p, target(s))
	if _, err := h.Run(t.Context(), node.NewCommand("true")); err != nil {
		t.Fatal(err)
	}
	if p.OpenConnections() != 1 {
		t.Fatalf("open connections = %d, want 1", p.OpenConnections())
	}
	frozen := s.ConnectionPIDs(t)
	for _, pid := range s.Descendants(t) {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, pid := range frozen {
			_ = syscall.Kill(pid, syscall.SIGKILL) //nolint:errcheck // it may be gone.
		}
	})
	waitFor(t, "the pool to close the hung connection", func() bool { return p.OpenConnections() == 0 })
	if _, err := h.Run(t.Context(), node.NewCommand("true")); err != nil {
		t.Fatalf("after a hung connection: %v", err)
	}
	if got := p.Handshakes(); got != 2 {
		t.Errorf("handshakes = %d, want 2", got)
	}
}

func TestBastion(t *testing.T) {
	jump := acctest.StartSSHD(t)
	dest := acctest.StartSSHD(t)
	other := acctest.StartSSHD(t) // before the pool: the pool closes while every sshd runs
	p := newPool(t, node.PoolOptions{})
	tg := target(dest)
	b := target(jump).Endpoint
	tg.Bastion = &b

	res, err := newHost(t, p, tg).Run(t.Context(), node.NewCommand("echo", "through"))
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Stdout) != "through\n" {
		t.Errorf("stdout %q", res.Stdout)
	}
	if got := p.Handshakes(); got != 2 {
		t.Errorf("handshakes = %d, want 2 (bastion and destination)", got)
	}
	if got := len(jump.ConnectionPIDs(t)); got != 1 {
		t.Errorf("the bastion has %d connections, want 1 (carrying the destination's)", got)
	}

	// A second node behind the same bastion reuses the bastion connection.
	tg2 := target(other)
	tg2.Bastion = &b
	if _, err := newHost(t, p, tg2).Run(t.Context(), node.NewCommand("true")); err != nil {
		t.Fatal(err)
	}
	if got := p.Handshakes(); got != 3 {
		t.Errorf("handshakes = %d, want 3", got)
	}

	// The destination's host key is checked against the destination's policy.
	bad := tg
	bad.HostKey = node.HostKeyPolicy{PinnedKeys: jump.HostPublicKey}
	_, err = newHost(t, p, bad).Run(t.Context(), node.NewCommand("true"))
	var hkErr *node.HostKeyError
	if !errors.As(err, &hkErr) {
		t.Errorf("wrong destination key through the bastion: %v", err)
	}
}

func TestConnectTimeout(t *testing.T) {
	// A server that accepts TCP connections and never speaks.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() }) //nolint:errcheck // test teardown.
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			_ = c.Close() //nolint:errcheck // test teardown.
		}
	})
	port := l.Addr().(*net.TCPAddr).Port //nolint:forcetypeassert // a tcp listener.
	tg := node.Target{
		Endpoint:       node.Endpoint{Host: "127.0.0.1", Port: port, Auth: node.Auth{Password: "x"}, HostKey: node.HostKeyPolicy{InsecureIgnoreHostKey: true}},
		ConnectTimeout: 300 * time.Millisecond,
	}
	start := time.Now()
	_, err = newHost(t, newPool(t, node.PoolOptions{}), tg).Run(t.Context(), node.NewCommand("true"))
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "timed out after 300ms") {
		t.Errorf("want a connect timeout, got %v", err)
	}
	if elapsed := time.Since(start); elapsed > 3*time.Second {
		t.Errorf("a 300ms connect timeout took %s", elapsed)
	}
}

func TestPool_CloseAndLogging(t *testing.T) {
	s := acctest.StartSSHD(t)
	var mu sync.Mutex
	var logged []string
	p := node.NewPool(node.PoolOptions{Logger: func(_ context.Context, msg string, fields map[string]any) {
		mu.Lock()
		defer mu.Unlock()
		logged = append(logged, fmt.Sprintf("%s %v", msg, fields))
	}})
	h := newHost(t, p, target(s))
	if _, err := h.Run(t.Context(), node.NewCommand("echo").Secret("hunter2")); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	all := strings.Join(logged, "\n")
	mu.Unlock()
	if strings.Contains(all, "hunter2") || strings.Contains(all, "PRIVATE KEY") {
		t.Errorf("the log holds a secret:\n%s", all)
	}
	for _, want := range []string{"SSH connected", "SSH command finished", "command:echo <redacted>", "exit_code:0"} {
		if !strings.Contains(all, want) {
			t.Errorf("the log does not contain %q:\n%s", want, all)
		}
	}

	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Run(t.Context(), node.NewCommand("true")); !errors.Is(err, node.ErrPoolClosed) {
		t.Errorf("after Close: %v", err)
	}
	if _, err := p.Host(target(s)); !errors.Is(err, node.ErrPoolClosed) {
		t.Errorf("Host after Close: %v", err)
	}
	waitFor(t, "sshd to see the connection closed", func() bool { return len(s.ConnectionPIDs(t)) == 0 })
}

func TestFiles(t *testing.T) {
	s := acctest.StartSSHD(t)
	h := newHost(t, newPool(t, node.PoolOptions{}), target(s))
	ctx := t.Context()
	// A name that needs quoting everywhere.
	dir := filepath.Join(t.TempDir(), "it's a \"dir\"\n$(x)", "sub")

	fi, err := h.Stat(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Exists {
		t.Fatalf("Stat of a missing path: %+v", fi)
	}

	if err := h.MkdirAll(ctx, dir, node.DirOptions{Mode: fs.ModeSetgid | 0o750, Owner: "nobody", Group: "nogroup"}); err != nil {
		t.Fatal(err)
	}
	fi, err = h.Stat(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	local, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	st := local.Sys().(*syscall.Stat_t) //nolint:forcetypeassert // Linux.
	if !fi.Exists || !fi.IsDir() || !fi.Empty || fi.Mode != fs.ModeDir|fs.ModeSetgid|0o750 || fi.UID != int(st.Uid) || fi.GID != int(st.Gid) || st.Uid == 0 {
		t.Errorf("Stat after MkdirAll = %+v; the directory is uid %d gid %d mode %s", fi, st.Uid, st.Gid, local.Mode())
	}

	// Repeating MkdirAll changes the mode, clearing setgid.
	if err := h.MkdirAll(ctx, dir, node.DirOptions{Mode: 0o700}); err != nil {
		t.Fatal(err)
	}
	if fi, err = h.Stat(ctx, dir); err != nil || fi.Mode != fs.ModeDir|0o700 {
		t.Errorf("after a second MkdirAll: %+v, %v", fi, err)
	}

	file := filepath.Join(dir, "data -n")
	content := []byte("line 1\n\x00binary\xff\n")
	if err := h.WriteFile(ctx, file, content, 0o640); err != nil {
		t.Fatal(err)
	}
	got, err := h.ReadFile(ctx, file)
	if err != nil || !bytes.Equal(got, content) {
		t.Errorf("ReadFile = %q, %v; want %q", got, err, content)
	}
	if fi, err = h.Stat(ctx, file); err != nil || fi.Mode != 0o640 || fi.Size != int64(len(content)) || fi.IsDir() {
		t.Errorf("Stat of the file: %+v, %v", fi, err)
	}
	if fi, err = h.Stat(ctx, dir); err != nil || fi.Empty {
		t.Errorf("Stat of a directory with a file: %+v, %v", fi, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Errorf("WriteFile left %d entries (%v), want only the file", len(entries), err)
	}

	if _, err := h.ReadFile(ctx, filepath.Join(dir, "absent")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile of a missing file: %v", err)
	}

	err = h.RemoveDir(ctx, dir)
	if !errors.Is(err, node.ErrDirNotEmpty) {
		t.Errorf("RemoveDir of a non-empty directory: %v", err)
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if err := h.RemoveDir(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if err := h.RemoveDir(ctx, dir); err != nil {
		t.Errorf("RemoveDir of a missing directory: %v", err)
	}
	if fi, err = h.Stat(ctx, dir); err != nil || fi.Exists {
		t.Errorf("Stat after RemoveDir: %+v, %v", fi, err)
	}

	for _, bad := range []func() error{
		func() error { _, err := h.Stat(ctx, "relative"); return err },
		func() error { return h.MkdirAll(ctx, "relative", node.DirOptions{}) },
		func() error { return h.MkdirAll(ctx, "/tmp/x", node.DirOptions{Owner: "a:b"}) },
		func() error { return h.RemoveDir(ctx, "-rf") },
		func() error { return h.WriteFile(ctx, "/tmp/x", nil, fs.ModeSetuid|0o755) },
	} {
		if err := bad(); err == nil {
			t.Error("invalid input accepted")
		}
	}
}

func newPublicKey(t *testing.T) ssh.PublicKey {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func parseKey(t *testing.T, line string) ssh.PublicKey {
	t.Helper()
	key, _, _, _, err := ssh.ParseAuthorizedKey([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// TestExec_StopReturnsBeforeTheSessionEnds cancels a command on a node whose login writes more to
// stderr before the command runs than Exec looks through for the process id line, so stop cannot
// kill the command and returns while the session still runs. Exec must return a Result no
// session goroutine writes to any more and stop writing to the caller's writers (run with -race:
// Exec read the buffers the session's copy goroutines wrote).
func TestExec_StopReturnsBeforeTheSessionEnds(t *testing.T) {
	s := acctest.StartSSHDWith(t, acctest.SSHDOptions{ExtraConfig: []string{
		`ForceCommand head -c 40000 /dev/zero | tr '\0' x >&2; eval "$SSH_ORIGINAL_COMMAND"`,
	}})
	h := newHost(t, newPool(t, node.PoolOptions{}), target(s))
	const marker = "27.75" // the command's sleep, to end it
	t.Cleanup(func() {
		for _, pid := range processesWith(t, marker) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		deadline := time.Now().Add(10 * time.Second)
		for len(processesWith(t, marker)) == 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
	}()
	out := &lockedWriter{}
	res, err := h.Exec(ctx, node.Script(`echo started; sleep "$1"; echo finished`, marker), node.ExecOptions{Stdout: out})
	out.mu.Lock()
	out.closed = true
	out.mu.Unlock()
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "process id was never reported") {
		t.Fatalf("want a cancelled command that could not be stopped, got %v", err)
	}
	if string(res.Stdout) != "started\n" {
		t.Errorf("stdout %q, want the line written before the stop", res.Stdout)
	}
	for _, pid := range processesWith(t, marker) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	out.mu.Lock()
	defer out.mu.Unlock()
	if out.late != 0 {
		t.Errorf("%d bytes reached the caller's Stdout after Exec returned", out.late)
	}
}

// TestExec_CancelOnANoisyLogin: a node whose login prints to stderr before the command runs (an
// audit ForceCommand, a chatty shell startup file) still has its command stopped on cancel, and
// the login's output stays in stderr.
func TestExec_CancelOnANoisyLogin(t *testing.T) {
	s := acctest.StartSSHDWith(t, acctest.SSHDOptions{ExtraConfig: []string{
		`ForceCommand echo "audit: session logged" >&2; echo "and a line without end" | tr -d '\n' >&2; echo >&2; eval "$SSH_ORIGINAL_COMMAND"`,
	}})
	h := newHost(t, newPool(t, node.PoolOptions{}), target(s))
	const marker = "26.25"
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		deadline := time.Now().Add(10 * time.Second)
		for len(processesWith(t, marker)) == 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
	}()
	res, err := h.Run(ctx, node.NewCommand("sleep", marker))
	if !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "stopping it on the node failed") {
		t.Fatalf("want a cancelled and stopped command, got %v", err)
	}
	if !strings.HasPrefix(string(res.Stderr), "audit: session logged\nand a line without end\n") {
		t.Errorf("stderr %q lost the login's output", res.Stderr)
	}
	waitFor(t, "the cancelled sleep to be gone", func() bool {
		return len(processesWith(t, marker)) == 0
	})
}

// lockedWriter records writes, and counts those that arrive once closed is set.
type lockedWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	closed bool
	late   int
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		w.late += len(p)
	}
	return w.buf.Write(p)
}

// TestWriteFile_ThroughSymlink: writing a path that is a symbolic link (relative, via a second
// link) replaces the file it points to, keeps the links, and leaves no temporary file.
func TestWriteFile_ThroughSymlink(t *testing.T) {
	s := acctest.StartSSHD(t)
	h := newHost(t, newPool(t, node.PoolOptions{}), target(s))
	root := t.TempDir()
	real := filepath.Join(root, "etc", "config.yaml")
	linkDir := filepath.Join(root, "links")
	for _, d := range []string{filepath.Dir(real), linkDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(real, []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	first, second := filepath.Join(linkDir, "config.yaml"), filepath.Join(linkDir, "again.yaml")
	if err := os.Symlink("../etc/config.yaml", first); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("config.yaml", second); err != nil {
		t.Fatal(err)
	}

	if err := h.WriteFile(t.Context(), second, []byte("new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, link := range []string{first, second} {
		if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			t.Errorf("%s is no longer a symbolic link (%v)", link, err)
		}
	}
	got, err := os.ReadFile(real)
	if err != nil || string(got) != "new\n" {
		t.Errorf("the link's target holds %q (%v), want the new data", got, err)
	}
	if fi, err := os.Stat(real); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("the target's mode is not the one written (%v)", err)
	}
	for d, want := range map[string]int{filepath.Dir(real): 1, linkDir: 2} {
		if entries, err := os.ReadDir(d); err != nil || len(entries) != want {
			t.Errorf("%s holds %v (%v), want %d entries: no temporary file left", d, entries, err, want)
		}
	}

	// A link to a file that does not exist yet: the file is made where it points.
	dangling := filepath.Join(linkDir, "new.yaml")
	if err := os.Symlink("../etc/new.yaml", dangling); err != nil {
		t.Fatal(err)
	}
	if err := h.WriteFile(t.Context(), dangling, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(root, "etc", "new.yaml")); err != nil || string(got) != "x" {
		t.Errorf("writing through a dangling link: %q, %v", got, err)
	}
}

// TestWriteFile_FlushesFileAndDirectory traces the remote command's system calls (strace, run by
// an sshd ForceCommand around every command): the temporary file is fsynced before it is renamed
// over the file, and its directory after, so a crash leaves the old or the new file, never an
// empty one.
func TestWriteFile_FlushesFileAndDirectory(t *testing.T) {
	testenv.LookPath(t, "strace")
	traceFile := filepath.Join(t.TempDir(), "trace")
	s := acctest.StartSSHDWith(t, acctest.SSHDOptions{ExtraConfig: []string{
		`ForceCommand strace -f -qq -y -e trace=fsync,fdatasync,rename,renameat,renameat2 -o ` + traceFile + ` sh -c "$SSH_ORIGINAL_COMMAND"`,
	}})
	h := newHost(t, newPool(t, node.PoolOptions{}), target(s))
	dir := t.TempDir()
	file := filepath.Join(dir, "fstab")
	if err := h.WriteFile(t.Context(), file, []byte("data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	trace, err := os.ReadFile(traceFile)
	if err != nil {
		t.Fatal(err)
	}
	syncedFile, renamed, syncedDir := -1, -1, -1
	for i, line := range strings.Split(string(trace), "\n") {
		switch {
		case strings.Contains(line, "fsync(") && strings.Contains(line, "<"+file+".") && strings.HasSuffix(line, "= 0"):
			syncedFile = i
		case strings.Contains(line, "rename") && strings.Contains(line, `"`+file+`"`) && strings.HasSuffix(line, "= 0"):
			renamed = i
		case strings.Contains(line, "fsync(") && strings.Contains(line, "<"+dir+">") && strings.HasSuffix(line, "= 0"):
			syncedDir = i
		}
	}
	if syncedFile < 0 || renamed < syncedFile || syncedDir < renamed {
		t.Errorf("want fsync of the temporary file, then the rename, then fsync of %s; lines %d, %d, %d of the trace:\n%s", dir, syncedFile, renamed, syncedDir, trace)
	}
}

// TestMkdirAll_RefusesSymlink: MkdirAll on a symbolic link to a directory fails and leaves the
// mode and owner of the directory it points to as they were.
func TestMkdirAll_RefusesSymlink(t *testing.T) {
	s := acctest.StartSSHD(t)
	h := newHost(t, newPool(t, node.PoolOptions{}), target(s))
	root := t.TempDir()
	real, link := filepath.Join(root, "real"), filepath.Join(root, "link")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	err := h.MkdirAll(t.Context(), link, node.DirOptions{Mode: 0o777, Owner: "nobody"})
	if err == nil || !strings.Contains(err.Error(), "is a symbolic link") {
		t.Errorf("MkdirAll on a symbolic link: %v", err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t) //nolint:forcetypeassert // Linux.
	if fi.Mode().Perm() != 0o700 || int(st.Uid) != os.Getuid() {
		t.Errorf("the link's target changed: mode %s, uid %d", fi.Mode(), st.Uid)
	}

	// RealPath resolves the link, and keeps components that do not exist.
	got, err := h.RealPath(t.Context(), filepath.Join(link, "not", "yet"))
	if want := filepath.Join(real, "not", "yet"); err != nil || got != want {
		t.Errorf("RealPath = %q, %v; want %q", got, err, want)
	}
}

// Concurrent Stats share commands, and each caller gets the answer for its own path.
func TestStat_ConcurrentCallsShareCommands(t *testing.T) {
	s := acctest.StartSSHD(t)
	h := newHost(t, newPool(t, node.PoolOptions{}), target(s))
	root := t.TempDir()
	type want struct {
		exists, dir, empty bool
		size               int64
	}
	wants := map[string]want{}
	for i := range 120 {
		p := filepath.Join(root, fmt.Sprintf("p %d 'q'", i))
		switch i % 4 {
		case 0: // missing
			wants[p] = want{}
		case 1:
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
			wants[p] = want{exists: true, dir: true, empty: true}
		case 2:
			if err := os.MkdirAll(filepath.Join(p, "data"), 0o755); err != nil {
				t.Fatal(err)
			}
			wants[p] = want{exists: true, dir: true}
		case 3:
			if err := os.WriteFile(p, make([]byte, i), 0o600); err != nil {
				t.Fatal(err)
			}
			wants[p] = want{exists: true, size: int64(i)}
		}
	}
	var wg sync.WaitGroup
	for p, w := range wants {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fi, err := h.Stat(t.Context(), p)
			if err != nil {
				t.Errorf("Stat(%q): %v", p, err)
				return
			}
			got := want{exists: fi.Exists, dir: fi.IsDir(), empty: fi.Empty}
			if !fi.IsDir() {
				got.size = fi.Size
			}
			if fi.Path != p || got != w {
				t.Errorf("Stat(%q) = %+v, want %+v", p, fi, w)
			}
		}()
	}
	wg.Wait()
	if n := node.StatCommands(h); n >= len(wants)/2 {
		t.Errorf("%d concurrent Stats ran %d commands, want them to share (fewer than %d)", len(wants), n, len(wants)/2)
	} else {
		t.Logf("%d concurrent Stats ran %d commands", len(wants), n)
	}
}

// Concurrent MkdirAlls, RealPaths and RemoveDirs share commands too; each caller gets its own
// outcome: a symbolic link, a non-empty directory or a path under a file fails alone, and the
// directories around it are made, resolved and removed.
func TestFileOps_ConcurrentCallsShareCommands(t *testing.T) {
	s := acctest.StartSSHD(t)
	h := newHost(t, newPool(t, node.PoolOptions{}), target(s))
	root := t.TempDir()
	real := filepath.Join(root, "real")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	link, file := filepath.Join(root, "link"), filepath.Join(root, "file")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	const n = 60
	dirs := make([]string, n)
	for i := range dirs {
		dirs[i] = filepath.Join(root, fmt.Sprintf("vol %d 'q'", i), "data")
	}
	run := func(each func(i int, p string)) {
		var wg sync.WaitGroup
		for i, p := range dirs {
			wg.Add(1)
			go func() { defer wg.Done(); each(i, p) }()
		}
		wg.Wait()
	}

	run(func(i int, p string) {
		if err := h.MkdirAll(t.Context(), p, node.DirOptions{Mode: 0o750}); err != nil {
			t.Errorf("MkdirAll(%q): %v", p, err)
		}
	})
	var wg sync.WaitGroup
	bad := map[string]string{link: "is a symbolic link", filepath.Join(file, "sub"): "Not a directory"}
	for p, want := range bad {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := h.MkdirAll(t.Context(), p, node.DirOptions{Mode: 0o777}); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("MkdirAll(%q) = %v, want an error saying %q", p, err, want)
			}
		}()
	}
	wg.Wait()
	for _, p := range dirs {
		if fi, err := os.Stat(p); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o750 {
			t.Errorf("%s after MkdirAll: %v %v", p, fi, err)
		}
	}
	if fi, err := os.Stat(real); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the link's target changed: %v %v", fi, err)
	}

	run(func(i int, p string) {
		via := filepath.Join(link, "..", filepath.Base(filepath.Dir(p)), "data")
		if i%2 == 1 {
			via = filepath.Join(link, "x", "y")
		}
		got, err := h.RealPath(t.Context(), via)
		want := p
		if i%2 == 1 {
			want = filepath.Join(real, "x", "y")
		}
		if err != nil || got != want {
			t.Errorf("RealPath(%q) = %q, %v; want %q", via, got, err, want)
		}
	})

	busy := dirs[0]
	if err := os.WriteFile(filepath.Join(busy, "keep"), []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	run(func(i int, p string) {
		err := h.RemoveDir(t.Context(), p)
		if p == busy {
			if !errors.Is(err, node.ErrDirNotEmpty) {
				t.Errorf("RemoveDir of a non-empty directory: %v", err)
			}
			return
		}
		if err != nil {
			t.Errorf("RemoveDir(%q): %v", p, err)
		}
	})
	for _, p := range dirs {
		_, err := os.Stat(p)
		if p == busy && err != nil {
			t.Errorf("the non-empty directory is gone: %v", err)
		}
		if p != busy && !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s after RemoveDir: %v", p, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(busy, "keep")); err != nil || string(b) != "data" {
		t.Errorf("the non-empty directory's file: %q %v", b, err)
	}

	for what, count := range map[string]int{"MkdirAll": node.MkdirCommands(h), "RealPath": node.RealPathCommands(h), "RemoveDir": node.RemoveDirCommands(h)} {
		if count >= n/2 {
			t.Errorf("%d concurrent %s calls ran %d commands, want them to share (fewer than %d)", n, what, count, n/2)
		} else {
			t.Logf("%d concurrent %s calls ran %d commands", n, what, count)
		}
	}
}
