// Package testenv holds what tests of every package share about the machine they run on, and a
// local volume on it. It imports nothing of this project, so any package's tests can use it, and
// so can the fixture packages tests import (acctest/benchtest).
package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// Missing skips t for a missing prerequisite, or fails it when the CI environment variable is
// set: CI installs everything the tests need (scripts/deps.sh), so there a missing tool is a
// broken machine, not a reason to skip.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

// LookPath returns the path of the program name, calling Missing when it is not installed.
func LookPath(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Missing(t, "%s is not installed (scripts/deps.sh installs it)", name)
	}
	return p
}
