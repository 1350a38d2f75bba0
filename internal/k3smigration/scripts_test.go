package k3smigration

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/testenv"
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

// check_datastore, run by sh as the node runs it, on a sound kine-shaped database in WAL mode, on
// a copy of it with a damaged page, on a data dir without one, and on a node without sqlite3.
func TestCheckDatastoreScript(t *testing.T) {
	testenv.LookPath(t, "sqlite3")
	run := func(path, dir string) []byte {
		t.Helper()
		cmd := exec.Command("sh", "-c", scriptCheckDatastore.text(), "sh", dir)
		cmd.Env = append(os.Environ(), "PATH="+path)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("check_datastore %s: %v: %s", dir, err, out)
		}
		return out
	}
	sound := filepath.Join(t.TempDir(), "k3s")
	db := filepath.Join(sound, "server/db/state.db")
	if err := os.MkdirAll(filepath.Dir(db), 0o755); err != nil {
		t.Fatal(err)
	}
	// kine's table and indexes, rows in the WAL (not checkpointed) and in the main file.
	sql := `PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0;
		CREATE TABLE kine (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT, prev_revision INTEGER, deleted INTEGER, value BLOB);
		CREATE INDEX kine_name_index ON kine (name); CREATE INDEX kine_prev_revision_index ON kine (prev_revision);
		WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
		INSERT INTO kine (name, prev_revision, deleted, value) SELECT '/registry/x/' || i, i, 0, randomblob(200) FROM n;`
	if out, err := exec.Command("sqlite3", db, sql).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	sys := os.Getenv("PATH")
	if _, err := datastoreVerdict(run(sys, sound), sound); err != nil {
		t.Fatalf("a sound datastore: %v", err)
	}

	broken := filepath.Join(t.TempDir(), "k3s")
	if out, err := exec.Command("cp", "-a", sound, broken).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	f, err := os.OpenFile(filepath.Join(broken, "server/db/state.db"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	// Every page after the first two (the schema's) overwritten with a pattern: the byte count
	// is unchanged, the b-trees are not.
	junk := bytes.Repeat([]byte{0x5a}, int(st.Size())-8192)
	if _, err := f.WriteAt(junk, 8192); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// The WAL too, or sqlite reads the newest pages from it.
	if err := os.Remove(filepath.Join(broken, "server/db/state.db-wal")); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	out := run(sys, broken)
	if _, err := datastoreVerdict(out, broken); err == nil || !strings.Contains(err.Error(), "integrity check") {
		t.Fatalf("a damaged datastore: %v (output %q)", err, out)
	}

	empty := t.TempDir()
	if w, err := datastoreVerdict(run(sys, empty), empty); w != "" || err != nil {
		t.Fatalf("no datastore: %q %v", w, err)
	}
	if w, err := datastoreVerdict(run(t.TempDir(), sound), sound); err != nil || !strings.Contains(w, "no sqlite3") {
		t.Fatalf("no sqlite3: %q %v", w, err)
	}
}
