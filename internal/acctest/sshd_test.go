package acctest

import (
	"os"
	"os/exec"
	"path/filepath"
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

// TestStartSSHDWith checks that options reach sshd through tools/sshd-config.sh: a SetEnv line's
// variables join the function's SetEnv line (sshd honours only the first), other lines follow.
func TestStartSSHDWith(t *testing.T) {
	s := StartSSHDWith(t, SSHDOptions{ExtraConfig: []string{"SetEnv CST_OPTION=on", "MaxSessions 4"}})
	if _, err := exec.LookPath("ssh"); err != nil {
		t.Skip("the ssh client is not installed (openssh-client)")
	}
	out, err := exec.Command("ssh", "-F", "/dev/null", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes",
		"-o", "UserKnownHostsFile="+s.KnownHostsPath, "-i", s.ClientKeyPath, "-p", strconv.Itoa(s.Port),
		s.User+"@"+s.Host, `echo "$CST_OPTION"`).CombinedOutput()
	if err != nil {
		t.Fatalf("ssh: %v: %s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "on" {
		t.Fatalf("ssh printed %q, want the SetEnv option's value %q", got, "on")
	}
	config, err := os.ReadFile(filepath.Join(s.Dir, "sshd_config"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"SetEnv SHLVL=1 CST_OPTION=on", "MaxSessions 4", "PermitRootLogin prohibit-password"} {
		if !strings.Contains(string(config), "\n"+line+"\n") {
			t.Errorf("sshd_config has no line %q:\n%s", line, config)
		}
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
