package acctest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// LoadConfig returns the HCL of testdata/<name> in the calling test's package with args filled into
// its fmt verbs (`%[1]q`, `%s`...), as cloudflare's acctest.LoadTestCase does: a test's
// configuration lives in a .tf file an editor and `terraform fmt` can read, not in a Go string.
// A verb without its argument, or an argument without its verb, fails the test.
func LoadConfig(t testing.TB, name string, args ...any) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("reading the test's configuration: %v", err)
	}
	format := string(raw)
	if strings.Contains(format, "%[") { // fmt reports no unused argument once verbs are indexed
		for i := range args {
			if !strings.Contains(format, fmt.Sprintf("%%[%d]", i+1)) {
				t.Fatalf("testdata/%s does not use its argument %d (%v)", name, i+1, args[i])
			}
		}
	}
	config := fmt.Sprintf(format, args...)
	if i := strings.Index(config, "%!"); i >= 0 {
		t.Fatalf("testdata/%s does not match its %d arguments: %s", name, len(args), config[i:min(len(config), i+40)])
	}
	return config
}
