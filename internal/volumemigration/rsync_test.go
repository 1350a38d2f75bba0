package volumemigration

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseCopyOutput(t *testing.T) {
	const mk = "clusterstorage-copy-abc"
	log := mk + ` stats

Number of files: 4 (reg: 2, dir: 2)
Number of regular files transferred: 1,234
Total file size: 3,895 bytes
Total transferred file size: 12,345,678 bytes
rsync: some warning on stderr
` + mk + ` took 1500
` + mk + ` verify
` + mk + ` differs >fc........ d/x
` + mk + ` took 250
` + mk + ` stats
Number of regular files transferred: 1
Total transferred file size: 2 bytes
` + mk + ` took 20
` + mk + ` verify
` + mk + ` took 230
` + mk + ` exit 0
`
	got, err := parseCopyOutput(log, mk)
	if err != nil {
		t.Fatal(err)
	}
	want := copyOutput{Files: 1235, Bytes: 12345680, Verified: true, Ended: true, CopySeconds: 1.52, VerifySeconds: 0.48, Unchanged: -1, XattrFiles: -1}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestParseCopyOutput_mismatchAndFailure(t *testing.T) {
	const mk = "m"
	got, err := parseCopyOutput("m stats\nm verify\nm differs >fc........ a\nm differs *deleting b\nm exit 0\n", mk)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{">fc........ a", "*deleting b"}; !reflect.DeepEqual(got.Differs, want) {
		t.Errorf("differs = %q, want %q", got.Differs, want)
	}
	got, err = parseCopyOutput("m stats\nrsync: write failed: No space left on device (28)\nm exit 11\n", mk)
	if err != nil || got.Exit != 11 || !got.Ended {
		t.Errorf("failure: %+v, %v", got, err)
	}
	got, err = parseCopyOutput("m stats\nNumber of regular files transferred: 3\n", mk)
	if err != nil || got.Ended {
		t.Errorf("cut short: %+v, %v", got, err)
	}
	// Lines of rsync's statistics outside a stats section (a file named so) do not count.
	got, _ = parseCopyOutput("Number of regular files transferred: 3\nm exit 0\n", mk)
	if got.Files != 0 {
		t.Errorf("counted %d files outside a stats section", got.Files)
	}
	if _, err := parseCopyOutput("m exit what\n", mk); err == nil {
		t.Error("an unreadable exit line was accepted")
	}
}

func TestStatValue(t *testing.T) {
	for line, want := range map[string]int64{
		"Total transferred file size: 3,895 bytes": 3895,
		"Total transferred file size: 3.895 bytes": 3895,
		"Total transferred file size: 0 bytes":     0,
	} {
		if got, ok := statValue(line, "Total transferred file size:"); !ok || got != want {
			t.Errorf("%q: %d, %v", line, got, ok)
		}
	}
	if _, ok := statValue("Total transferred file size:", "Total transferred file size:"); ok {
		t.Error("no value read as one")
	}
}

// TestCopyScript runs the copy pod's script with the machine's rsync on two directories: a full
// copy reports what it moved, the final mode verifies, and a target file changed behind rsync's
// back (same size and time, so its quick check misses it) is found by the verification and
// copied again.
func TestCopyScript(t *testing.T) {
	if _, err := exec.LookPath("rsync"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("rsync is not installed (scripts/deps.sh installs it)")
		}
		t.Skip("rsync is not installed")
	}
	src, dst := t.TempDir(), t.TempDir()
	must(t, os.MkdirAll(filepath.Join(src, "d"), 0o755))
	must(t, os.WriteFile(filepath.Join(src, "d", "a"), []byte("aaaa"), 0o640))
	must(t, os.WriteFile(filepath.Join(src, "b"), make([]byte, 10000), 0o600))
	var raw string
	run := func(mode string) copyOutput {
		t.Helper()
		var got copyOutput
		got, raw = runCopyScript(t, src, dst, mode)
		return got
	}
	if got := run(modeCopy); got.Files != 2 || got.Bytes != 10004 || got.Verified || !got.Ended || got.Exit != 0 {
		t.Errorf("copy: %+v", got)
	}
	info, err := os.Stat(filepath.Join(src, "d", "a"))
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dst, "d", "a"), []byte("bbbb"), 0o640))
	must(t, os.Chtimes(filepath.Join(dst, "d", "a"), info.ModTime(), info.ModTime()))
	got := run(modeFinal)
	if !got.Verified || len(got.Differs) != 0 || got.Files != 1 || got.Bytes != 4 {
		t.Errorf("final: %+v", got)
	}
	// Each pass and verification is timed: copy, verify, the copy by content, verify.
	if n := strings.Count(raw, "\nMK took "); n != 4 {
		t.Errorf("%d passes timed, want 4:\n%s", n, raw)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "d", "a")); string(b) != "aaaa" {
		t.Errorf("the changed file was not copied again: %q", b)
	}
	if !strings.HasPrefix(raw, "MK sparse -S\n") {
		t.Errorf("the final pass does not keep sparse files sparse:\n%s", raw)
	}
}

// TestCopyScript_sparse: the first copy keeps sparse files sparse (rsync -S) when the source
// has one, and skips -S, which reads every block for zeros, when it has none.
func TestCopyScript_sparse(t *testing.T) {
	if _, err := exec.LookPath("rsync"); err != nil {
		t.Skip("rsync is not installed (TestCopyScript fails in CI for it)")
	}
	run := func(src string) string {
		t.Helper()
		_, raw := runCopyScript(t, src, t.TempDir(), modeCopy)
		return raw
	}
	dense := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dense, "a"), make([]byte, 100000), 0o600))
	must(t, os.WriteFile(filepath.Join(dense, "tiny"), []byte("x"), 0o600))
	if out := run(dense); !strings.Contains(out, "MK sparse no\n") {
		t.Errorf("a source without sparse files:\n%s", out)
	}
	sparse := t.TempDir()
	f, err := os.Create(filepath.Join(sparse, "disk.img"))
	must(t, err)
	must(t, f.Truncate(64<<20))
	must(t, f.Close())
	if out := run(sparse); !strings.Contains(out, "MK sparse -S\n") {
		t.Errorf("a source with a sparse file:\n%s", out)
	}
}

// runCopyScript runs the copy pod's script with the machine's rsync from src to dst in mode (with
// the script's further args), with marker "MK", and returns what it reported and its output.
func runCopyScript(t *testing.T, src, dst, mode string, args ...string) (copyOutput, string) {
	t.Helper()
	cmd := exec.Command("sh", append([]string{"-c", copyScript, "copy.sh", mode, "MK"}, args...)...)
	cmd.Env = append(os.Environ(), "SOURCE="+src, "TARGET="+dst)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", mode, args, err, out)
	}
	got, err := parseCopyOutput(string(out), "MK")
	must(t, err)
	return got, string(out)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestCopyScript_record: the final verification reads only the files that changed since the
// record the first copy made, and still finds every change: a file rewritten behind rsync's
// quick check (same size and modification time: only its ctime tells), one made, one deleted,
// one whose mode changed, on the source; one rewritten so on the target. The one file untouched
// is the only one not read; the record is gone from the target afterwards.
func TestCopyScript_record(t *testing.T) {
	if _, err := exec.LookPath("rsync"); err != nil {
		t.Skip("rsync is not installed (TestCopyScript fails in CI for it)")
	}
	src, dst := t.TempDir(), t.TempDir()
	write := func(dir, name, content string) {
		t.Helper()
		must(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o640))
	}
	for _, name := range []string{"same", "rewritten", "deleted", "chmod", "target-rewritten"} {
		write(src, name, "content of "+name)
	}
	run := func(mode string) (copyOutput, string) {
		t.Helper()
		return runCopyScript(t, src, dst, mode)
	}
	if got, raw := run(modeCopy); got.Exit != 0 || !strings.Contains(raw, "MK record\n") {
		t.Fatalf("copy: %+v\n%s", got, raw)
	}
	record, err := os.ReadFile(filepath.Join(dst, ".clusterstorage-migration-verified", "verified"))
	must(t, err)
	if n := strings.Count(string(record), "\n"); n != 5 {
		t.Fatalf("the record lists %d files, want 5:\n%s", n, record)
	}
	// Same size, same modification time: rsync's quick check cannot see these.
	sneak := func(dir, name, content string) {
		t.Helper()
		info, err := os.Stat(filepath.Join(dir, name))
		must(t, err)
		write(dir, name, content)
		must(t, os.Chtimes(filepath.Join(dir, name), info.ModTime(), info.ModTime()))
	}
	sneak(src, "rewritten", "CONTENT of rewritten")
	sneak(dst, "target-rewritten", "CONTENT of target-rewritten")
	must(t, os.Remove(filepath.Join(src, "deleted")))
	must(t, os.Chmod(filepath.Join(src, "chmod"), 0o600))
	write(src, "new", "new file")
	got, raw := run(modeFinal)
	if got.Exit != 0 || !got.Verified || len(got.Differs) != 0 || got.Unchanged != 1 {
		t.Fatalf("final: %+v\n%s", got, raw)
	}
	for _, name := range []string{"same", "rewritten", "chmod", "target-rewritten", "new"} {
		want, err := os.ReadFile(filepath.Join(src, name))
		must(t, err)
		if b, err := os.ReadFile(filepath.Join(dst, name)); err != nil || string(b) != string(want) {
			t.Errorf("%s on the target: %q (%v), want %q", name, b, err, want)
		}
	}
	if info, err := os.Stat(filepath.Join(dst, "chmod")); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("chmod on the target: %v %v", info, err)
	}
	if _, err := os.Stat(filepath.Join(dst, "deleted")); !os.IsNotExist(err) {
		t.Errorf("deleted is still on the target: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dst, ".clusterstorage-migration-verified")); !os.IsNotExist(err) {
		t.Errorf("the record is left on the target: %v", err)
	}
}

// TestCopyScript_xattrs: without copy_xattrs the first copy counts the files whose extended
// attributes or ACLs it leaves out; with it, every pass copies them and the final verification
// compares them (one changed on the source after the record is found and copied again).
func TestCopyScript_xattrs(t *testing.T) {
	for _, tool := range []string{"rsync", "setfattr", "getfattr", "setfacl"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not installed (scripts/deps.sh installs rsync, attr and acl)", tool)
			}
			t.Skipf("%s is not installed", tool)
		}
	}
	src := t.TempDir()
	must(t, os.WriteFile(filepath.Join(src, "tagged"), []byte("x"), 0o640))
	must(t, os.WriteFile(filepath.Join(src, "acl"), []byte("y"), 0o640))
	must(t, os.WriteFile(filepath.Join(src, "plain"), []byte("z"), 0o640))
	sh := func(name string, args ...string) string {
		t.Helper()
		out, err := exec.Command(name, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return string(out)
	}
	sh("setfattr", "-n", "user.origin", "-v", "camera-1", filepath.Join(src, "tagged"))
	sh("setfacl", "-m", "u:1234:r", filepath.Join(src, "acl"))
	run := func(dst, mode string, args ...string) copyOutput {
		t.Helper()
		got, raw := runCopyScript(t, src, dst, mode, args...)
		if got.Exit != 0 {
			t.Fatalf("%s %v: %+v\n%s", mode, args, got, raw)
		}
		return got
	}
	if got := run(t.TempDir(), modeCopy); got.XattrFiles != 2 {
		t.Errorf("without xattrs: %d files with attributes left out reported, want 2", got.XattrFiles)
	}
	dst := t.TempDir()
	if got := run(dst, modeCopy, "xattrs"); got.XattrFiles != -1 {
		t.Errorf("with xattrs the copy counts what it leaves out: %+v", got)
	}
	if v := sh("getfattr", "--absolute-names", "--only-values", "-n", "user.origin", filepath.Join(dst, "tagged")); v != "camera-1" {
		t.Errorf("user.origin on the target: %q", v)
	}
	sh("setfattr", "-n", "user.origin", "-v", "camera-2", filepath.Join(src, "tagged"))
	if got := run(dst, modeFinal, "xattrs"); !got.Verified || len(got.Differs) != 0 {
		t.Errorf("final: %+v", got)
	}
	if v := sh("getfattr", "--absolute-names", "--only-values", "-n", "user.origin", filepath.Join(dst, "tagged")); v != "camera-2" {
		t.Errorf("user.origin on the target after the final pass: %q", v)
	}
	if acl := sh("getfacl", "--absolute-names", "-c", filepath.Join(dst, "acl")); !strings.Contains(acl, "user:1234:r--") {
		t.Errorf("the ACL on the target:\n%s", acl)
	}
}
