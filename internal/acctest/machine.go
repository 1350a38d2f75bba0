package acctest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/node"
)

// MachineSpec describes a test machine for StartMachine: a real systemd as PID 1 in
// systemd-nspawn (tools/kube/node.sh), with the unit layout of the caller's choosing, e.g. a
// k3s-shaped node (k3s.service with the directives of k3s's install script).
type MachineSpec struct {
	// Layout is a directory copied over the machine's root file system at every boot: its
	// units (etc/systemd/system/*.service and *.wants/ links) and their files.
	Layout string
	// WaitUnits are the units StartMachine waits for to be active.
	WaitUnits []string
	// Mask are units of this machine's host that must not start inside (e.g. containerd.service
	// when the layout brings its own).
	Mask []string
	// DataDisks are extra ext4 disks as name:size (e.g. "data:1G"), at /mnt/disks/<name> inside.
	DataDisks []string
	// Binds and BindsRO are host:machine bind mounts.
	Binds, BindsRO []string
}

// Machine is a running test machine, with its own loopback address and sshd.
type Machine struct {
	ClusterNode
	// Dir is its node.sh directory (machine.env, disks, console.log).
	Dir string
}

// StartMachine boots a test machine and powers it off and removes it when the test ends. It
// needs root and systemd-nspawn: without them it skips the test, unless the CI environment
// variable is set, in which case it fails.
func StartMachine(t testing.TB, spec MachineSpec) *Machine {
	t.Helper()
	tool := filepath.Join(RepoRoot(), "tools", "kube", "node.sh")
	if _, err := exec.LookPath("systemd-nspawn"); err != nil || os.Geteuid() != 0 {
		msg := "test machines need root and systemd-nspawn (apt-get install systemd-container; make test does this through scripts/deps.sh)"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	dir := t.TempDir()
	name := RandomName("acc-machine")
	address, port := freeLoopback(t)
	keyPath := filepath.Join(dir, "client_ed25519")
	pub := generateKey(t, "ed25519", keyPath)
	writeFile(t, keyPath+".authorized", pub+"\n", 0o644)

	var env strings.Builder
	fmt.Fprintf(&env, "MACHINE_NAME=%s\nMACHINE_ADDRESS=%s\nMACHINE_SSH_PORT=%d\nMACHINE_AUTHORIZED_KEYS=%s\nMACHINE_DISK_SIZE=4G\n",
		name, address, port, node.Quote(keyPath+".authorized"))
	if spec.Layout != "" {
		fmt.Fprintf(&env, "MACHINE_LAYOUT=%s\n", node.Quote(spec.Layout))
	}
	for _, a := range []struct {
		name   string
		values []string
	}{{"MACHINE_WAIT_UNITS", spec.WaitUnits}, {"MACHINE_MASK", spec.Mask}, {"MACHINE_DATA_DISKS", spec.DataDisks},
		{"MACHINE_BINDS", spec.Binds}, {"MACHINE_BINDS_RO", spec.BindsRO}} {
		quoted := make([]string, len(a.values))
		for i, v := range a.values {
			quoted[i] = node.Quote(v)
		}
		fmt.Fprintf(&env, "%s=(%s)\n", a.name, strings.Join(quoted, " "))
	}
	machineDir := filepath.Join(dir, "machine")
	if err := os.Mkdir(machineDir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(machineDir, "machine.env"), env.String(), 0o644)

	t.Cleanup(func() {
		if out, err := exec.Command(tool, "destroy", machineDir).CombinedOutput(); err != nil {
			t.Errorf("removing test machine %s: %v\n%s", name, err, out)
		}
	})
	if out, err := exec.Command(tool, "up", machineDir).CombinedOutput(); err != nil {
		console, _ := os.ReadFile(filepath.Join(machineDir, "console.log")) //nolint:errcheck // shown when present
		t.Fatalf("booting test machine %s: %v\n%s\nconsole:\n%s", name, err, out, console)
	}
	hostKey, err := os.ReadFile(filepath.Join(machineDir, "ssh", "ssh_host_ed25519_key.pub"))
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(hostKey))
	known := filepath.Join(dir, "known_hosts")
	writeFile(t, known, fmt.Sprintf("[%s]:%d %s %s\n", address, port, fields[0], fields[1]), 0o600)

	// The machine is the test's own, no other test uses it: the test holds it alone.
	c := &clusterNodes{SSHUser: "root", SSHPrivateKey: keyPath, SSHKnownHosts: known, NodeTool: tool, alone: true}
	c.pool = newNodePool(t)
	m := &Machine{Dir: machineDir, ClusterNode: ClusterNode{
		Name: name, Address: address, SSHHost: address, SSHPort: port, MachineDir: machineDir, cluster: c,
	}}
	for _, d := range spec.DataDisks {
		m.DataDisks = append(m.DataDisks, "/mnt/disks/"+strings.SplitN(d, ":", 2)[0])
	}
	return m
}

// Exec runs argv inside the machine through nsenter, without SSH (for what a test must see even
// when the machine's sshd is stopped), and returns its combined output.
func (m *Machine) Exec(t testing.TB, argv ...string) (string, error) {
	t.Helper()
	out, err := exec.Command(m.cluster.NodeTool, append([]string{"exec", m.Dir}, argv...)...).CombinedOutput()
	return string(out), err
}

// freeLoopback picks a random address in 127.77.0.0/16 and a port free on it.
func freeLoopback(t testing.TB) (string, int) {
	t.Helper()
	for range 20 {
		address := fmt.Sprintf("127.77.%d.%d", rand.IntN(250)+1, rand.IntN(250)+1) //nolint:gosec // not a secret
		l, err := net.Listen("tcp", net.JoinHostPort(address, "0"))
		if err != nil {
			continue
		}
		port := l.Addr().(*net.TCPAddr).Port //nolint:forcetypeassert // a TCP listener's address
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		return address, port
	}
	t.Fatal("no free loopback address and port for a test machine")
	return "", 0
}

// PowerOn boots the machine again after PowerOff (its disks kept) and waits for its WaitUnits.
func (m *Machine) PowerOn(t testing.TB) {
	t.Helper()
	m.nodeTool(t, "up")
}
