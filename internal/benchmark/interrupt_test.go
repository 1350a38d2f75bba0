package benchmark_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest/benchtest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/benchmark"
)

// Ctrl-C of `terraform plan` while fio runs in its pod: terraform stops within seconds, and the
// pod, the claim and the run directory are gone, the volume Available again. terraform-plugin-
// testing cannot interrupt the CLI, so this test runs the CLI under test itself (devCLI), with the
// provider built from this tree through dev_overrides, as a user would.
func TestAccStorageBenchmark_interrupt(t *testing.T) {
	acctest.RunsUnder(t, acctest.EveryCLI)
	e := benchtest.Setup(t)
	start := devCLI(t, acctest.ProviderConfig())
	class := e.Class()
	pv, dir := e.LocalPV(class, "")
	run := start(fmt.Sprintf(`
data "clusterstorage_storage_benchmark" "test" {
  storage_class = %q
  namespace     = %q
  node          = %q
  runtime       = "10m"
  size          = "16M"
%s}
`, class, e.NS, e.Node, benchtest.PodAttributes()))

	// Interrupt once fio runs: its run directory holds its file.
	run.WaitFor(t, "fio to run", 3*time.Minute, func() bool {
		files, _ := filepath.Glob(filepath.Join(dir, ".clusterstorage-benchmark-*", "*"))
		return len(files) > 0
	})
	pods, err := e.Client.CoreV1().Pods(e.NS).List(context.Background(), metav1.ListOptions{LabelSelector: benchmark.LabelRun})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("want the running fio pod, got %v %v", pods, err)
	}
	began := time.Now()
	run.Signal(t, syscall.SIGINT)
	err = run.Wait(t, 2*time.Minute)
	t.Logf("terraform exited %s after Ctrl-C: %v", time.Since(began).Round(10*time.Millisecond), err)
	if out := run.Output(); !strings.Contains(out, "cancelled while waiting for pod") {
		t.Errorf("output does not say the benchmark was cancelled:\n%s", out)
	}
	for _, err := range []error{e.NoLeftovers(false), benchtest.NoRunDirs(dir), e.VolumeAvailable(pv)} {
		if err != nil {
			t.Error(err)
		}
	}
}
