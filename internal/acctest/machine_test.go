package acctest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A machine with a k3s-shaped unit (Type=notify, KillMode=process, Delegate=yes, Restart=always,
// as k3s's install script writes them) and a data disk: the unit is active, stopping it leaves
// the process it started with setsid running (as k3s's containerd shims do), the data disk is
// ext4, and a file on the machine's own disk survives a power-off.
func TestStartMachine(t *testing.T) {
	layout := t.TempDir()
	units := filepath.Join(layout, "etc", "systemd", "system")
	if err := os.MkdirAll(filepath.Join(units, "multi-user.target.wants"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(units, "fake-k3s.service"), `[Unit]
Description=a unit with k3s's directives
[Service]
Type=notify
NotifyAccess=all
KillMode=process
Delegate=yes
Restart=always
ExecStart=/bin/sh -c 'setsid sleep 1001 & systemd-notify --ready; exec sleep infinity'
[Install]
WantedBy=multi-user.target
`, 0o644)
	if err := os.Symlink("../fake-k3s.service", filepath.Join(units, "multi-user.target.wants", "fake-k3s.service")); err != nil {
		t.Fatal(err)
	}
	m := StartMachine(t, MachineSpec{Layout: layout, WaitUnits: []string{"fake-k3s.service"}, DataDisks: []string{"data:256M"},
		Mask: []string{"containerd.service"}})

	if got := strings.TrimSpace(m.MustRun(t, "hostname")); got != m.Name {
		t.Errorf("hostname %q over SSH to %s:%d, want %s", got, m.SSHHost, m.SSHPort, m.Name)
	}
	if got := strings.TrimSpace(m.MustRun(t, `findmnt -n -o FSTYPE "$1"`, m.DataDisks[0])); got != "ext4" {
		t.Errorf("data disk %s is %q, want ext4", m.DataDisks[0], got)
	}
	if out, err := m.Exec(t, "systemctl", "is-active", "containerd.service"); strings.TrimSpace(out) == "active" {
		t.Errorf("masked containerd.service is active (%v)", err)
	}
	m.MustRun(t, "systemctl stop fake-k3s.service")
	if out, _ := m.Exec(t, "systemctl", "is-active", "fake-k3s.service"); strings.TrimSpace(out) != "inactive" { //nolint:errcheck // is-active exits 3 when inactive
		t.Errorf("fake-k3s.service is %q after stop, want inactive", out)
	}
	if _, err := m.Exec(t, "pgrep", "-f", "sleep 1001"); err != nil {
		t.Errorf("the process the unit started with setsid did not outlive the unit (KillMode=process): %v", err)
	}

	m.MustRun(t, `mkdir -p /var/lib/acc && echo kept > /var/lib/acc/file`)
	m.PowerOff(t)
	if _, err := m.Run(t, "true"); err == nil {
		t.Error("the machine still answers over SSH after PowerOff")
	}
	m.PowerOn(t)
	if got := strings.TrimSpace(m.MustRun(t, "cat /var/lib/acc/file")); got != "kept" {
		t.Errorf("file on the machine's disk after a power cycle: %q, want kept", got)
	}
}
