package acctest

import (
	"os"
	"path/filepath"
	"testing"
)

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "testdata"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "testdata", "a.tf"), []byte("name = %[1]q\nsize = %[2]d\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	if got, want := LoadConfig(t, "a.tf", "x", 3), "name = \"x\"\nsize = 3\n"; got != want {
		t.Errorf("LoadConfig = %q, want %q", got, want)
	}
	for _, args := range [][]any{{"x"}, {"x", 3, "extra"}} {
		ft := &fatalRecorder{TB: t}
		func() {
			defer func() { _ = recover() }()
			LoadConfig(ft, "a.tf", args...)
		}()
		if !ft.failed {
			t.Errorf("LoadConfig with %d arguments for 2 verbs did not fail", len(args))
		}
	}
}

// fatalRecorder records Fatalf instead of ending the test, and stops the caller with a panic.
type fatalRecorder struct {
	testing.TB
	failed bool
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatalf(string, ...any) {
	f.failed = true
	panic("fatal")
}
