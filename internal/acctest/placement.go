package acctest

import "testing"

// CLISet is a set of CLIs an acceptance test declares it runs under besides the whole suite's
// (scripts/test.sh's TEST_CLIS, Terraform 1.15.9 by default).
type CLISet string

// The sets a test can declare with RunsUnder. `go run ./internal/acctest/placement` lists the
// tests of each from these declarations, and scripts/test.sh places the tests by that list, so a
// test keeps its place when it is renamed or moved.
const (
	// EveryCLI: also the CLIs that run only the tests where CLIs can differ (SUBSET_CLIS, OpenTofu):
	// how a CLI plans and applies each type, imports, moves, identity, write-only and unknown
	// values, interrupts.
	EveryCLI CLISet = "every-cli"
	// OldestTerraform: also the smoke subset's CLIs (SMOKE_CLIS, Terraform 1.5.7, the oldest
	// supported).
	OldestTerraform CLISet = "oldest-terraform"
	// FirstCLIOnly: only the first of TEST_CLIS, even when several run the whole suite: Helm
	// machinery and fault rows, which no CLI takes part in.
	FirstCLIOnly CLISet = "first-cli-only"
)

// RunsUnder declares which CLIs the test runs under besides the whole suite's. It is the test's
// first statement, so that the placement lister finds it; it does nothing when the test runs.
func RunsUnder(t testing.TB, sets ...CLISet) {
	t.Helper()
	_ = sets
}
