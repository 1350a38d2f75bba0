package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// write makes dir/<pkg>/x_test.go of body (after the package clause and the imports).
func write(t *testing.T, dir, body string) {
	t.Helper()
	pkg := filepath.Join(dir, "thing")
	if err := os.MkdirAll(pkg, 0o750); err != nil {
		t.Fatal(err)
	}
	src := "package thing_test\n\nimport (\n\t\"testing\"\n\n\t\"example.com/internal/acctest\"\n)\n\n" + body
	if err := os.WriteFile(filepath.Join(pkg, "x_test.go"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
}

// everySet declares every set once; noEveryCLI all but EveryCLI.
const everySet = `
func TestAccOther_everyCLI(t *testing.T) {
	acctest.RunsUnder(t, acctest.EveryCLI)
}
` + noEveryCLI

const noEveryCLI = `
func TestAccOther_smoke(t *testing.T) {
	acctest.RunsUnder(t, acctest.OldestTerraform)
}

func TestAccOther_machinery(t *testing.T) {
	acctest.RunsUnder(t, acctest.FirstCLIOnly)
}
`

// TestList: a test is placed by its declaration, whatever its name; tests that declare nothing
// are in no set.
func TestList(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, `
func TestAccThing_lifecycle(t *testing.T) {
	acctest.RunsUnder(t, acctest.EveryCLI, acctest.OldestTerraform)
	t.Log("runs")
}

func TestAccThing_renamedLater(t *testing.T) {
	acctest.RunsUnder(t, acctest.EveryCLI)
}

func TestAccThing_undeclared(t *testing.T) {}
`+everySet)
	placed, err := List(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"EveryCLI":        {"TestAccOther_everyCLI", "TestAccThing_lifecycle", "TestAccThing_renamedLater"},
		"OldestTerraform": {"TestAccOther_smoke", "TestAccThing_lifecycle"},
		"FirstCLIOnly":    {"TestAccOther_machinery"},
	}
	for set, tests := range want {
		if !slices.Equal(placed[set], tests) {
			t.Errorf("%s: %v, want %v", set, placed[set], tests)
		}
	}
}

// TestList_misplaced: a declaration anywhere but at the top of a test, of no set or of a set
// the lister does not know, or in a test that is not an acceptance test, fails the listing, and
// so scripts/test.sh; so does a set no test declares.
func TestList_misplaced(t *testing.T) {
	for name, body := range map[string]string{
		"not first":      "func TestAccThing_a(t *testing.T) {\n\tt.Log(1)\n\tacctest.RunsUnder(t, acctest.EveryCLI)\n}\n" + everySet,
		"in a helper":    "func place(t *testing.T) {\n\tacctest.RunsUnder(t, acctest.EveryCLI)\n}\n" + everySet,
		"in a closure":   "func TestAccThing_a(t *testing.T) {\n\tt.Run(\"x\", func(t *testing.T) { acctest.RunsUnder(t, acctest.EveryCLI) })\n}\n" + everySet,
		"no set":         "func TestAccThing_a(t *testing.T) {\n\tacctest.RunsUnder(t)\n}\n" + everySet,
		"unknown set":    "func TestAccThing_a(t *testing.T) {\n\tacctest.RunsUnder(t, \"tofu\")\n}\n" + everySet,
		"first and more": "func TestAccThing_a(t *testing.T) {\n\tacctest.RunsUnder(t, acctest.FirstCLIOnly, acctest.EveryCLI)\n}\n" + everySet,
		"not acceptance": "func TestThing(t *testing.T) {\n\tacctest.RunsUnder(t, acctest.EveryCLI)\n}\n" + everySet,
		"empty set":      "func TestAccThing_a(t *testing.T) {}\n" + noEveryCLI,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, everySet)
			if _, err := List(dir); err != nil {
				t.Fatalf("the sets alone: %v", err)
			}
			write(t, dir, body)
			if _, err := List(dir); err == nil {
				t.Errorf("listed without an error:\n%s", body)
			} else {
				t.Log(err)
			}
		})
	}
}

// TestRepository: the repository's own declarations list without an error, and each set's regex
// matches its tests and nothing else of the suite.
func TestRepository(t *testing.T) {
	placed, err := List(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, tests := range placed {
		all = append(all, tests...)
	}
	for set, tests := range placed {
		re := regexp.MustCompile(Regex(tests))
		for _, name := range all {
			if re.MatchString(name) != slices.Contains(tests, name) {
				t.Errorf("%s's regex %s: matches %s is %v", set, re, name, re.MatchString(name))
			}
		}
		if strings.Contains(Regex(tests), "||") {
			t.Errorf("%s: an empty name in %v", set, tests)
		}
	}
}
