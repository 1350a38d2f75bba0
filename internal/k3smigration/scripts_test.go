package k3smigration

import (
	"io/fs"
	"strings"
	"testing"
)

// Every script named in the code has its file, includes lib.sh (every script refuses control
// characters first), and every file is named in the code.
func TestScripts(t *testing.T) {
	named := map[string]bool{"lib": true}
	for _, s := range allScripts {
		named[string(s)] = true
		b, err := scriptFiles.ReadFile("scripts/" + string(s) + ".sh")
		if err != nil {
			t.Errorf("%s: %v", s, err)
			continue
		}
		if !strings.HasPrefix(string(b), "#!/bin/sh\n") || !strings.Contains(string(b), includeLine) {
			t.Errorf("%s.sh does not start with #!/bin/sh or does not include lib.sh", s)
		}
		text := s.text()
		if strings.Contains(text, includeLine) || !strings.Contains(text, "refuse_control_chars() {") || !strings.Contains(text, `refuse_control_chars "$@"`) {
			t.Errorf("%s: lib.sh not inlined, or the script does not refuse control characters", s)
		}
	}
	files, err := fs.Glob(scriptFiles, "scripts/*.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if name := strings.TrimSuffix(strings.TrimPrefix(f, "scripts/"), ".sh"); !named[name] {
			t.Errorf("%s is not named in allScripts", f)
		}
	}
}

func TestCheckPath_controlCharacters(t *testing.T) {
	for _, p := range []string{"/x\ntarget=empty", "/mnt/k3s\t", "/mnt/\x1b[31mred", "/mnt/a\x7f"} {
		if err := CheckPath("target", p); err == nil || !strings.Contains(err.Error(), "control character") {
			t.Errorf("CheckPath(%q) = %v", p, err)
		}
	}
	if err := CheckPath("target", "/mnt/nvme/k3s with space"); err != nil {
		t.Errorf("a space is refused: %v", err)
	}
}

func TestUnitDataDir(t *testing.T) {
	cases := []struct{ unit, want string }{
		{"[Service]\nExecStart=/usr/local/bin/k3s \\\n    server \\\n    --data-dir=/mnt/k3s \\\n", "/mnt/k3s"},
		{"ExecStart=/usr/local/bin/k3s server -d /srv/k3s", "/srv/k3s"},
		{"ExecStart=/usr/local/bin/k3s server --data-dir \"/a b\"", "/a b"},
		{"ExecStart=/usr/local/bin/k3s server\n# --data-dir /ignored\n", ""},
		{"ExecStart=/usr/local/bin/k3s agent --node-name d1", ""},
	}
	for _, c := range cases {
		if got := unitDataDir(c.unit); got != c.want {
			t.Errorf("unitDataDir(%q) = %q, want %q", c.unit, got, c.want)
		}
	}
	if got := envDataDir([]byte("K3S_TOKEN=x\nK3S_DATA_DIR='/mnt/k3s'\n")); got != "/mnt/k3s" {
		t.Errorf("envDataDir = %q", got)
	}
	if got := unitEnvFiles("EnvironmentFile=-/etc/default/%N\nEnvironmentFile=-/etc/systemd/system/k3s.service.env\n", "k3s"); strings.Join(got, ",") != "/etc/default/k3s,/etc/systemd/system/k3s.service.env" {
		t.Errorf("unitEnvFiles = %q", got)
	}
}
