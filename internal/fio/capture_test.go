package fio

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// captureEnv turns on TestCapture.
const captureEnv = "CLUSTERSTORAGE_FIO_CAPTURE"

// captureCase is one real fio run whose output is kept in testdata.
type captureCase struct {
	file  string
	about string
	spec  func(t *testing.T) Spec
	// dir returns the directory fio is given, inside the empty temporary
	// directory root (default: root itself).
	dir func(t *testing.T, s Spec, root string) string
}

func captureSpec(t *testing.T, profile string, o Override) Spec {
	t.Helper()
	size, runtime := "16M", 2*time.Second
	o.Size, o.Runtime = &size, &runtime
	return mustProfile(t, profile).Apply(o)
}

func intp(i int) *int                     { return &i }
func strp(s string) *string               { return &s }
func boolp(b bool) *bool                  { return &b }
func durp(d time.Duration) *time.Duration { return &d }

var captureCases = []captureCase{
	{
		file:  "randrw.json",
		about: "profile database (8k randrw, 70% reads, iodepth 16, libaio, direct)",
		spec:  func(t *testing.T) Spec { return captureSpec(t, "database", Override{}) },
	},
	{
		file:  "read.json",
		about: "profile random_read (4k randread, iodepth 64)",
		spec:  func(t *testing.T) Spec { return captureSpec(t, "random_read", Override{}) },
	},
	{
		file:  "write.json",
		about: "profile sequential_write (1M write, iodepth 16)",
		spec:  func(t *testing.T) Spec { return captureSpec(t, "sequential_write", Override{}) },
	},
	{
		file:  "stonewall.json",
		about: "three jobs one after another: random_read with num_jobs 2, random_write, sequential_read",
		spec: func(t *testing.T) Spec {
			var s Spec
			s.Jobs = append(s.Jobs, captureSpec(t, "random_read", Override{NumJobs: intp(2)}).Jobs...)
			s.Jobs = append(s.Jobs, captureSpec(t, "random_write", Override{}).Jobs...)
			s.Jobs = append(s.Jobs, captureSpec(t, "sequential_read", Override{}).Jobs...)
			return s
		},
	},
	{
		file:  "fsync.json",
		about: "profile fsync (8k buffered sequential writes, fdatasync after each, sync engine)",
		spec:  func(t *testing.T) Spec { return captureSpec(t, "fsync", Override{}) },
	},
	{
		file:  "note-psync.txt",
		about: "profile database with ioengine psync: fio prints a note before its JSON",
		spec:  func(t *testing.T) Spec { return captureSpec(t, "database", Override{IOEngine: strp("psync")}) },
	},
	{
		file:  "error-no-directory.txt",
		about: "a directory that does not exist: fio prints no JSON, only its error",
		spec:  func(t *testing.T) Spec { return captureSpec(t, "database", Override{}) },
		dir:   func(_ *testing.T, _ Spec, root string) string { return filepath.Join(root, "missing") },
	},
	{
		file:  "error-is-directory.txt",
		about: "the test file's path is a directory: fio prints JSON with error 21 (EISDIR) and its message on stderr",
		spec:  func(t *testing.T) Spec { return captureSpec(t, "database", Override{}) },
		dir: func(t *testing.T, s Spec, root string) string {
			if err := os.Mkdir(Files(s, root)[0], 0o755); err != nil {
				t.Fatal(err)
			}
			return root
		},
	},
}

// TestCapture runs the real fio and writes its output (stdout, then stderr)
// into testdata, with a README naming the exact commands. It runs only with
// CLUSTERSTORAGE_FIO_CAPTURE=1:
//
//	CLUSTERSTORAGE_FIO_CAPTURE=1 go test -run TestCapture ./internal/fio
//
// The temporary directory in the outputs is replaced by /data, the directory
// the benchmark mounts, so captures do not change with the machine.
func TestCapture(t *testing.T) {
	if os.Getenv(captureEnv) != "1" {
		t.Skip("set " + captureEnv + "=1 to re-capture testdata from the real fio")
	}
	version, _ := fioRun(t, []string{"--version"})
	var readme strings.Builder
	readme.WriteString("# Captured fio outputs\n\n")
	readme.WriteString("Real outputs of `" + strings.TrimSpace(string(version)) + "` (Debian's package), written by\n")
	readme.WriteString("`CLUSTERSTORAGE_FIO_CAPTURE=1 go test -run TestCapture ./internal/fio` (see capture_test.go).\n")
	readme.WriteString("Each file is fio's stdout followed by its stderr, as the benchmark's runners pass them to\n")
	readme.WriteString("`Parse`. The temporary directory fio ran in is shown as `/data`. Sizes are 16M and runtimes\n")
	readme.WriteString("2s to keep captures quick; the machine was a 2-core VM with an ext4 virtio disk.\n")
	for _, c := range captureCases {
		s := c.spec(t)
		root := t.TempDir()
		dir := root
		if c.dir != nil {
			dir = c.dir(t, s, root)
		}
		args, err := Args(s, dir)
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		out, code := fioRun(t, args)
		out = []byte(strings.ReplaceAll(string(out), root, "/data"))
		if err := os.WriteFile(filepath.Join("testdata", c.file), out, 0o644); err != nil {
			t.Fatal(err)
		}
		var quoted []string
		for _, a := range args {
			quoted = append(quoted, shellQuote(strings.ReplaceAll(a, root, "/data")))
		}
		fmt.Fprintf(&readme, "\n## %s\n\n%s; exit code %d.\n\n```sh\nfio %s\n```\n", c.file, c.about, code, strings.Join(quoted, " "))
	}
	if err := os.WriteFile(filepath.Join("testdata", "README.md"), []byte(readme.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// shellQuote quotes a word for a POSIX shell when it needs it (for the README
// only; the benchmark's runners use internal/node's quoting).
func shellQuote(s string) string {
	if strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=./:,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
