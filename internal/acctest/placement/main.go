// Command placement lists the acceptance tests by the CLIs they declare they run under
// (acctest.RunsUnder as a test's first statement) and prints, for scripts/test.sh to eval, one
// shell assignment of a go test -run regex per set:
//
//	CLI_RUN             acctest.EveryCLI: the tests the subset CLIs (OpenTofu) run
//	SMOKE_RUN           acctest.OldestTerraform: the smoke subset (Terraform 1.5.7)
//	FIRST_CLI_ONLY_RUN  acctest.FirstCLIOnly: the tests only the first whole-suite CLI runs
//
// It fails when a declaration is anywhere but at the top of a Test function, names a set it does
// not know or none, declares FirstCLIOnly with another set, or when a set is empty: so that a
// test cannot leave its place silently.
//
// Usage: go run ./internal/acctest/placement [repository root, default .]
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// variables maps each set (the name of its acctest constant) to the shell variable of its regex.
var variables = []struct{ set, variable string }{
	{"EveryCLI", "CLI_RUN"},
	{"OldestTerraform", "SMOKE_RUN"},
	{"FirstCLIOnly", "FIRST_CLI_ONLY_RUN"},
}

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	placed, err := List(filepath.Join(root, "internal"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "placement:", err)
		os.Exit(1)
	}
	for _, v := range variables {
		fmt.Printf("%s='%s'\n", v.variable, Regex(placed[v.set]))
	}
}

// Regex is a go test -run regex matching exactly the tests named.
func Regex(tests []string) string {
	quoted := make([]string, len(tests))
	for i, name := range tests {
		quoted[i] = regexp.QuoteMeta(name)
	}
	return "^(" + strings.Join(quoted, "|") + ")$"
}
