package benchmark_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/benchmark"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

// Ctrl-C of `terraform plan` while fio runs in its pod: terraform stops within seconds, and the
// pod, the claim and the run directory are gone, the volume Available again. terraform-plugin-
// testing cannot interrupt the CLI, so this test runs the CLI under test itself, with the provider
// built from this tree through dev_overrides, as a user would.
func TestAccStorageBenchmark_interrupt(t *testing.T) {
	e := setup(t)
	cli := os.Getenv("TF_ACC_TERRAFORM_PATH")
	if cli == "" {
		t.Skip("TF_ACC_TERRAFORM_PATH names the Terraform CLI to interrupt")
	}
	class := e.class()
	pv, dir := e.localPV(class, "")

	work := t.TempDir()
	pluginDir := filepath.Join(work, "plugins")
	build := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(pluginDir, "terraform-provider-clusterstorage"), ".")
	build.Dir = acctest.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the provider: %v\n%s", err, out)
	}
	rc := filepath.Join(work, "dev.tfrc")
	writeTestFile(t, rc, fmt.Sprintf(`provider_installation {
  dev_overrides {
    "registry.terraform.io/clusterstorage/clusterstorage" = %q
    "registry.opentofu.org/clusterstorage/clusterstorage" = %q
  }
  direct {}
}
`, pluginDir, pluginDir))
	config := filepath.Join(work, "config")
	writeTestFile(t, filepath.Join(config, "main.tf"), fmt.Sprintf(`terraform {
  required_providers {
    clusterstorage = { source = "clusterstorage/clusterstorage" }
  }
}

provider "clusterstorage" {
  kubernetes {
    config_path = %q
  }
}

data "clusterstorage_storage_benchmark" "test" {
  storage_class = %q
  namespace     = %q
  node          = %q
  runtime       = "10m"
  size          = "16M"
%s}
`, acctest.Kubeconfig(), class, e.ns, e.node, podAttributes()))

	cmd := exec.Command(cli, "plan", "-no-color", "-input=false")
	cmd.Dir = config
	cmd.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+rc, "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill() //nolint:errcheck // the test already failed
			if err := <-done; err != nil {
				t.Logf("terraform killed: %v", err)
			}
		}
	})

	// Interrupt once fio runs: its run directory holds its file.
	err := kube.Poll(context.Background(), 100*time.Millisecond, 3*time.Minute, "fio to run", func(context.Context) (bool, string, error) {
		select {
		case err := <-done:
			return false, "", fmt.Errorf("terraform ended before fio ran: %v\n%s", err, out.String())
		default:
		}
		files, _ := filepath.Glob(filepath.Join(dir, ".clusterstorage-benchmark-*", "*"))
		return len(files) > 0, "", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	pods, err := e.client.CoreV1().Pods(e.ns).List(context.Background(), metav1.ListOptions{LabelSelector: benchmark.LabelRun})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("want the running fio pod, got %v %v", pods, err)
	}
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Logf("terraform exited: %v", err)
	case <-time.After(2 * time.Minute):
		t.Fatalf("terraform did not stop within 2 minutes of Ctrl-C\n%s", out.String())
	}
	took := time.Since(start)
	t.Logf("terraform stopped %s after Ctrl-C", took.Round(10*time.Millisecond))
	if !strings.Contains(out.String(), "cancelled while waiting for pod") {
		t.Errorf("output does not say the benchmark was cancelled:\n%s", out.String())
	}
	for _, err := range []error{e.noLeftovers(false), noRunDirs(dir), e.volumeAvailable(pv)} {
		if err != nil {
			t.Error(err)
		}
	}
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
