package acctest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// DevCLI is for tests that must drive the Terraform CLI themselves (interrupt it, kill it),
// which terraform-plugin-testing cannot: it returns the CLI under test (TF_ACC_TERRAFORM_PATH)
// and a CLI configuration file, for TF_CLI_CONFIG_FILE, whose dev_overrides make it use the
// provider built from this tree, as a user runs it. Without TF_ACC_TERRAFORM_PATH the test is
// skipped.
func DevCLI(t testing.TB) (cli, cliConfig string) {
	t.Helper()
	cli = os.Getenv("TF_ACC_TERRAFORM_PATH")
	if cli == "" {
		t.Skip("TF_ACC_TERRAFORM_PATH names the Terraform CLI to run")
	}
	work := t.TempDir()
	pluginDir := filepath.Join(work, "plugins")
	build := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(pluginDir, "terraform-provider-clusterstorage"), ".")
	build.Dir = RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the provider: %v\n%s", err, out)
	}
	cliConfig = filepath.Join(work, "dev.tfrc")
	rc := fmt.Sprintf(`provider_installation {
  dev_overrides {
    "registry.terraform.io/clusterstorage/clusterstorage" = %q
    "registry.opentofu.org/clusterstorage/clusterstorage" = %q
  }
  direct {}
}
`, pluginDir, pluginDir)
	if err := os.WriteFile(cliConfig, []byte(rc), 0o600); err != nil {
		t.Fatal(err)
	}
	return cli, cliConfig
}
