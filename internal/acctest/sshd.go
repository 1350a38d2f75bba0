package acctest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// SSHDPath is where tests look for the OpenSSH server. Debian's openssh-server package installs it
// there; `make test` installs that package when it is missing (scripts/deps.sh, which runs
// `apt-get install -y openssh-server`). Tests of sudo also need the sudo package.
const SSHDPath = "/usr/sbin/sshd"

// privsepDir is the privilege separation directory sshd refuses to start without. A package
// install creates it at boot through systemd-tmpfiles, which does not run on test machines.
const privsepDir = "/run/sshd"

// sshdStartTimeout bounds how long StartSSHD waits for sshd to accept connections.
const sshdStartTimeout = 15 * time.Second

// SSHD is a real OpenSSH server started for one test on 127.0.0.1, with host keys, a client key
// pair and a known_hosts file generated for that test only.
type SSHD struct {
	// Host is the address sshd listens on (always 127.0.0.1).
	Host string
	// Port is the TCP port sshd listens on.
	Port int
	// User is the user the test runs as; the client key logs in as this user.
	User string
	// ClientKeyPEM is the unencrypted OpenSSH private key authorized for every user of this sshd.
	ClientKeyPEM string
	// ClientKeyPath is the file holding ClientKeyPEM (mode 0600).
	ClientKeyPath string
	// ClientPublicKey is the authorized_keys line of the client key.
	ClientPublicKey string
	// HostPublicKey is the server's ed25519 host key in authorized_keys format.
	HostPublicKey string
	// HostPublicKeys are all of the server's host keys (ed25519 first, then ecdsa) in
	// authorized_keys format.
	HostPublicKeys []string
	// KnownHostsPath is a known_hosts file listing every host key for [Host]:Port.
	KnownHostsPath string
	// Dir is the temporary directory holding the configuration, keys and pid file.
	Dir string

	cmd            *exec.Cmd
	exited         chan struct{}
	log            *SyncBuffer
	authorizedKeys string
}

// SSHDOptions changes the generated sshd_config.
type SSHDOptions struct {
	// PasswordAuthentication enables password logins (for users made by AddUser with a password).
	PasswordAuthentication bool
	// ExtraConfig lines are appended to sshd_config verbatim, but for SetEnv lines, whose variables
	// join the one SetEnv line sshd honours.
	ExtraConfig []string
}

// StartSSHD starts sshd with default options; see StartSSHDWith.
func StartSSHD(t testing.TB) *SSHD {
	t.Helper()
	return StartSSHDWith(t, SSHDOptions{})
}

// StartSSHDWith starts `sshd -D -e` on a free 127.0.0.1 port and waits until it answers with an SSH
// banner. It skips the test when sshd is not installed, unless the CI environment variable is set,
// in which case it fails. sshd and every process it started are killed when the test ends, also
// when it fails; sshd's log is printed when the test failed.
func StartSSHDWith(t testing.TB, opts SSHDOptions) *SSHD {
	t.Helper()
	requireSSHD(t)

	current, err := user.Current()
	if err != nil {
		t.Fatalf("sshd harness: looking up the current user: %v", err)
	}
	dir := t.TempDir()
	s := &SSHD{Host: "127.0.0.1", User: current.Username, Dir: dir}

	hostKeys := []string{filepath.Join(dir, "host_ed25519_key"), filepath.Join(dir, "host_ecdsa_key")}
	for i, keyType := range []string{"ed25519", "ecdsa"} {
		line := generateKey(t, keyType, hostKeys[i])
		s.HostPublicKeys = append(s.HostPublicKeys, line)
	}
	s.HostPublicKey = s.HostPublicKeys[0]

	s.ClientKeyPath = filepath.Join(dir, "client_ed25519")
	s.ClientPublicKey = generateKey(t, "ed25519", s.ClientKeyPath)
	pem, err := os.ReadFile(s.ClientKeyPath)
	if err != nil {
		t.Fatalf("sshd harness: reading the client key: %v", err)
	}
	s.ClientKeyPEM = string(pem)

	// authorized_keys lives in its own world-readable directory: sshd reads it with the
	// privileges of the user logging in, which matters for users made by AddUser.
	authDir := filepath.Join(dir, "auth")
	if err := os.Mkdir(authDir, 0o755); err != nil {
		t.Fatalf("sshd harness: %v", err)
	}
	s.authorizedKeys = filepath.Join(authDir, "authorized_keys")
	writeFile(t, s.authorizedKeys, s.ClientPublicKey+"\n", 0o644)

	s.log = &SyncBuffer{}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		s.Port = freePort(t)
		writeFile(t, filepath.Join(dir, "sshd_config"), s.config(t, hostKeys, opts), 0o600)
		lastErr = s.start(t)
		if lastErr == nil {
			break
		}
		// Another process may have taken the port between freePort and sshd's bind: retry then.
		if !strings.Contains(s.log.String(), "Address already in use") {
			break
		}
	}
	if lastErr != nil {
		t.Fatalf("sshd harness: %v\nsshd log:\n%s", lastErr, s.log.String())
	}

	var known strings.Builder
	for _, line := range s.HostPublicKeys {
		fmt.Fprintf(&known, "[%s]:%d %s\n", s.Host, s.Port, line)
	}
	s.KnownHostsPath = filepath.Join(dir, "known_hosts")
	writeFile(t, s.KnownHostsPath, known.String(), 0o600)
	return s
}

// Addr returns "host:port".
func (s *SSHD) Addr() string {
	return net.JoinHostPort(s.Host, strconv.Itoa(s.Port))
}

// PID returns the process id of the listening sshd.
func (s *SSHD) PID() int {
	return s.cmd.Process.Pid
}

// ConnectionPIDs returns the process ids of the per-connection sshd processes, one for each
// client connection currently open.
func (s *SSHD) ConnectionPIDs(t testing.TB) []int {
	t.Helper()
	pids, err := childrenOf(s.PID())
	if err != nil {
		t.Fatalf("sshd harness: %v", err)
	}
	return pids
}

// DropConnections kills every per-connection sshd process (and what they run), as a server
// reboot or a network failure would: the client learns nothing of its commands' ends, only that
// the connection is gone. The listener keeps accepting new connections.
func (s *SSHD) DropConnections(t testing.TB) {
	t.Helper()
	for _, pid := range s.ConnectionPIDs(t) {
		killTree(pid)
	}
}

// Descendants returns the process ids of all processes started below the listening sshd,
// including commands run by clients.
func (s *SSHD) Descendants(t testing.TB) []int {
	t.Helper()
	pids, err := descendantsOf(s.PID())
	if err != nil {
		t.Fatalf("sshd harness: %v", err)
	}
	return pids
}

// Log returns what sshd has logged so far.
func (s *SSHD) Log() string {
	return s.log.String()
}

// TestUser is a system user made by AddUser.
type TestUser struct {
	// Name is the login name.
	Name string
	// Password is the login password ("" when the account has none).
	Password string
}

// UserOptions describes a user made by AddUser.
type UserOptions struct {
	// Password, when set, is the user's login password (and sudo password).
	Password string
	// Sudo writes a sudoers rule for the user: "" none, "nopasswd" for passwordless sudo, or
	// "password" for sudo that asks for the password.
	Sudo string
}

// AddUser makes a throw-away system user (useradd) that can log in to this sshd with the client
// key, and removes it when the test ends. It needs root; it skips the test otherwise, and when
// sudo is asked for but not installed.
func (s *SSHD) AddUser(t testing.TB, opts UserOptions) TestUser {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("sshd harness: making a system user needs root")
	}
	if opts.Sudo != "" {
		if _, err := exec.LookPath("sudo"); err != nil {
			t.Skip("sshd harness: sudo is not installed (apt-get install -y sudo)")
		}
	}
	name := fmt.Sprintf("cst%d", time.Now().UnixNano()%1_000_000_000)
	run(t, "useradd", "--create-home", "--shell", "/bin/sh", name)
	t.Cleanup(func() {
		_ = os.Remove(filepath.Join("/etc/sudoers.d", name))
		// -f: the user may still own processes (a command a test cancelled).
		if out, err := exec.Command("userdel", "-f", "-r", name).CombinedOutput(); err != nil {
			t.Logf("sshd harness: userdel %s: %v: %s", name, err, out)
		}
	})
	if opts.Password != "" {
		cmd := exec.Command("chpasswd")
		cmd.Stdin = strings.NewReader(name + ":" + opts.Password + "\n")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("sshd harness: chpasswd: %v: %s", err, out)
		}
	} else {
		// useradd leaves the account locked ("!"), and sshd without PAM refuses locked accounts
		// even for key logins; "*" means "no password" without locking.
		run(t, "usermod", "-p", "*", name)
	}
	switch opts.Sudo {
	case "":
	case "nopasswd":
		writeFile(t, filepath.Join("/etc/sudoers.d", name), name+" ALL=(ALL:ALL) NOPASSWD: ALL\n", 0o440)
	case "password":
		writeFile(t, filepath.Join("/etc/sudoers.d", name), name+" ALL=(ALL:ALL) ALL\n", 0o440)
	default:
		t.Fatalf("sshd harness: unknown sudo mode %q (want \"\", \"nopasswd\" or \"password\")", opts.Sudo)
	}
	// The new user must be able to reach authorized_keys through the test's temporary
	// directories, which t.TempDir makes 0700.
	for _, d := range []string{filepath.Dir(s.Dir), s.Dir} {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatalf("sshd harness: %v", err)
		}
	}
	return TestUser{Name: name, Password: opts.Password}
}

// SSHDConfigScript is the shell file whose sshd_config function writes every sshd_config of the
// repository: the local cluster's nodes, the scripts' and these tests'.
func SSHDConfigScript() string {
	return filepath.Join(RepoRoot(), "tools", "sshd-config.sh")
}

// config is the sshd_config that tools/sshd-config.sh's sshd_config function prints for this sshd,
// then opts.ExtraConfig's lines but for SetEnv lines, whose variables join the function's SetEnv
// line (SHLVL=1; sshd honours only the first).
func (s *SSHD) config(t testing.TB, hostKeys []string, opts SSHDOptions) string {
	t.Helper()
	password := "no"
	if opts.PasswordAuthentication {
		password = "yes"
	}
	env := []string{"SHLVL=1"}
	var extra []string
	for _, line := range opts.ExtraConfig {
		if vars, ok := strings.CutPrefix(line, "SetEnv "); ok {
			env = append(env, strings.Fields(vars)...)
			continue
		}
		extra = append(extra, line)
	}
	args := append([]string{"-c", `. "$1" && shift && sshd_config "$@"`, "sshd-config", SSHDConfigScript(),
		s.Addr(), filepath.Join(s.Dir, "sshd.pid"), s.authorizedKeys}, hostKeys...)
	cmd := exec.Command("bash", args...)
	cmd.Env = append(os.Environ(), "SSHD_PASSWORD_AUTHENTICATION="+password, "SSHD_SETENV="+strings.Join(env, " "))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sshd harness: writing sshd_config with %s: %v", SSHDConfigScript(), err)
	}
	return string(out) + strings.Join(append(extra, ""), "\n")
}

// start runs sshd and waits until it answers with an SSH banner or exits.
func (s *SSHD) start(t testing.TB) error {
	t.Helper()
	cmd := exec.Command(SSHDPath, "-D", "-e", "-f", filepath.Join(s.Dir, "sshd_config"))
	cmd.Stdout = s.log
	cmd.Stderr = s.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", SSHDPath, err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	s.cmd, s.exited = cmd, exited
	t.Cleanup(func() {
		s.stop()
		if t.Failed() {
			t.Logf("sshd log (%s):\n%s", s.Addr(), s.log.String())
		}
	})

	deadline := time.Now().Add(sshdStartTimeout)
	for {
		select {
		case <-exited:
			return fmt.Errorf("sshd exited before accepting connections: %v", waitErr)
		default:
		}
		if err := readBanner(s.Addr()); err == nil {
			return nil
		} else if time.Now().After(deadline) {
			return fmt.Errorf("sshd did not answer on %s within %s: %w", s.Addr(), sshdStartTimeout, err)
		}
		select {
		case <-exited:
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// stop kills the listener and every process below it (sshd's per-connection processes start new
// sessions, so killing the process group is not enough).
func (s *SSHD) stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	killTree(s.cmd.Process.Pid)
	<-s.exited
}

// readBanner connects to addr and reads the server's identification line.
func readBanner(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }() //nolint:errcheck // a probe connection; its close changes nothing.
	if err := conn.SetReadDeadline(time.Now().Add(time.Second)); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return fmt.Errorf("reading the SSH banner: %w", err)
	}
	if !strings.HasPrefix(line, "SSH-2.0-") {
		return fmt.Errorf("unexpected banner %q", line)
	}
	return nil
}

func requireSSHD(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(SSHDPath); err != nil {
		msg := fmt.Sprintf("sshd harness: %s not found: install it with `apt-get install -y openssh-server` (make test does this through scripts/deps.sh)", SSHDPath)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if _, err := os.Stat(privsepDir); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(privsepDir, 0o755); err != nil {
			t.Skipf("sshd harness: sshd needs its privilege separation directory %s and it cannot be made: %v", privsepDir, err)
		}
	}
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("sshd harness: ssh-keygen not found: install openssh-client")
	}
}

// generateKey writes a new unencrypted key pair to path and path.pub and returns the public key
// line without its comment.
func generateKey(t testing.TB, keyType, path string) string {
	t.Helper()
	run(t, "ssh-keygen", "-q", "-t", keyType, "-N", "", "-C", "", "-f", path)
	pub, err := os.ReadFile(path + ".pub")
	if err != nil {
		t.Fatalf("sshd harness: %v", err)
	}
	fields := strings.Fields(string(pub))
	if len(fields) < 2 {
		t.Fatalf("sshd harness: unexpected public key %q", pub)
	}
	return fields[0] + " " + fields[1]
}

// freePort asks the kernel for a free 127.0.0.1 port.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("sshd harness: finding a free port: %v", err)
	}
	port := l.Addr().(*net.TCPAddr).Port //nolint:forcetypeassert // a "tcp" listener always has a *net.TCPAddr.
	if err := l.Close(); err != nil {
		t.Fatalf("sshd harness: %v", err)
	}
	return port
}

func run(t testing.TB, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("sshd harness: %s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
}

func writeFile(t testing.TB, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatalf("sshd harness: %v", err)
	}
	// WriteFile does not change the mode of an existing file, nor ignore the umask.
	if err := os.Chmod(path, mode); err != nil {
		t.Fatalf("sshd harness: %v", err)
	}
}

// ChildrenOf returns the process ids whose parent is pid, from /proc.
func ChildrenOf(pid int) ([]int, error) { return childrenOf(pid) }

// childrenOf lists the processes whose parent is pid, from /proc.
func childrenOf(pid int) ([]int, error) {
	parents, err := processParents()
	if err != nil {
		return nil, err
	}
	var children []int
	for child, parent := range parents {
		if parent == pid {
			children = append(children, child)
		}
	}
	return children, nil
}

// descendantsOf lists every process below pid, from /proc.
func descendantsOf(pid int) ([]int, error) {
	parents, err := processParents()
	if err != nil {
		return nil, err
	}
	var out []int
	for child := range parents {
		for p := parents[child]; p > 1; p = parents[p] {
			if p == pid {
				out = append(out, child)
				break
			}
		}
	}
	return out, nil
}

// processParents maps every process id to its parent's, read from /proc/<pid>/stat.
func processParents() (map[int]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("listing processes: %w", err)
	}
	parents := make(map[int]int, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue // not a process directory
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // the process exited meanwhile
		}
		// The command name in parentheses may hold spaces: the fields after the last ')' are
		// "state ppid ...".
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(stat[i+1:]))
		if len(fields) < 2 {
			continue
		}
		ppid, err := strconv.Atoi(fields[1])
		if err != nil {
			continue
		}
		parents[pid] = ppid
	}
	return parents, nil
}

// killTree stops pid and every process below it, then kills them: frozen first, none of them
// tells the client anything (a command's exit or signal) before the connection is gone, as when
// the network or the server fails. Errors are not interesting: a process may exit on its own at
// any moment.
func killTree(pid int) {
	tree, _ := descendantsOf(pid) //nolint:errcheck // pid itself is still killed
	tree = append(tree, pid)
	for _, sig := range []syscall.Signal{syscall.SIGSTOP, syscall.SIGKILL} {
		for _, p := range tree {
			_ = syscall.Kill(p, sig)
		}
	}
}

// SyncBuffer is a bytes.Buffer safe for a process's output goroutines and test readers.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
