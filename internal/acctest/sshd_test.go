package acctest

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestStartSSHD logs in with the real OpenSSH client, checking the generated client key,
// authorized_keys and known_hosts work together with strict host key checking.
func TestStartSSHD(t *testing.T) {
	s := StartSSHD(t)
	if _, err := exec.LookPath("ssh"); err != nil {
		t.Skip("the ssh client is not installed (openssh-client)")
	}
	out, err := exec.Command("ssh",
		"-F", "/dev/null",
		"-o", "BatchMode=yes",
		"-o", "StrictHostKeyChecking=yes",
		"-o", "UserKnownHostsFile="+s.KnownHostsPath,
		"-i", s.ClientKeyPath,
		"-p", strconv.Itoa(s.Port),
		s.User+"@"+s.Host,
		`echo hello "$SHLVL"`,
	).CombinedOutput()
	if err != nil {
		t.Fatalf("ssh: %v: %s", err, out)
	}
	// The session's shell is not a top-level one (SetEnv SHLVL=1): bash skips ~/.bashrc. A
	// shell other than bash leaves SHLVL as it is.
	want := "hello 1"
	if shell, err := exec.Command("sh", "-c", `getent passwd "$(id -un)" | cut -d: -f7`).Output(); err == nil && strings.HasSuffix(strings.TrimSpace(string(shell)), "/bash") {
		want = "hello 2"
	}
	if got := strings.TrimSpace(string(out)); got != want {
		t.Fatalf("ssh printed %q, want %q", got, want)
	}
	if !strings.HasPrefix(s.HostPublicKey, "ssh-ed25519 ") || len(s.HostPublicKeys) != 2 {
		t.Fatalf("host keys: %q", s.HostPublicKeys)
	}
	if !strings.Contains(s.ClientKeyPEM, "OPENSSH PRIVATE KEY") {
		t.Fatalf("client key is not an OpenSSH private key")
	}
}

// TestSSHDStopsEverything checks that the cleanup kills sshd and its children.
func TestSSHDStopsEverything(t *testing.T) {
	var pid int
	t.Run("inner", func(t *testing.T) {
		s := StartSSHD(t)
		pid = s.PID()
	})
	parents, err := processParents()
	if err != nil {
		t.Fatal(err)
	}
	if _, alive := parents[pid]; alive {
		t.Fatalf("sshd (pid %d) still runs after its test ended", pid)
	}
}
