package fio

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/testenv"
)

// fioBinary returns the path of the real fio; without it the test skips, or fails in CI.
func fioBinary(t *testing.T) string {
	t.Helper()
	return testenv.LookPath(t, "fio")
}

// fioRun runs the real fio and returns its stdout followed by its stderr, as
// the benchmark's runners hand them to Parse, and its exit code.
func fioRun(t *testing.T, args []string) (out []byte, exitCode int) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), fioBinary(t), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		exitCode = exitErr.ExitCode()
	case err != nil:
		t.Fatalf("running fio: %v", err)
	}
	return append(stdout.Bytes(), stderr.Bytes()...), exitCode
}

// small shrinks a spec so that a real run takes about a second.
func small(s Spec) Spec {
	return s.Apply(Override{Size: strp("8M"), Runtime: durp(time.Second)})
}

func mustProfile(t *testing.T, name string) Spec {
	t.Helper()
	s, err := Profile(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// dirEntries returns the names in dir, sorted.
func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func basenames(paths []string) []string {
	var out []string
	for _, p := range paths {
		out = append(out, filepath.Base(p))
	}
	return out
}
