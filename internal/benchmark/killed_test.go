package benchmark_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest/benchtest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/benchmark"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

// devCLI returns a function that starts `plan` on a main.tf body (after providerBlock) in a
// workspace of its own, through the CLI under test with the provider built from this tree
// (acctest.Workspace): what a user runs.
func devCLI(t *testing.T, providerBlock string) func(body string) *acctest.CLIRun {
	t.Helper()
	cli, rc := acctest.DevCLI(t)
	return func(body string) *acctest.CLIRun {
		return acctest.NewWorkspace(t, cli, rc, providerBlock+body).Start(t, "plan")
	}
}

// fioProcesses returns the fio processes on this machine (the test node) whose command line
// names dir.
func fioProcesses(dir string) []string {
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || len(b) == 0 {
			continue
		}
		argv := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if filepath.Base(argv[0]) == "fio" && strings.Contains(string(b), dir) {
			out = append(out, filepath.Base(filepath.Dir(p))+": "+strings.Join(argv, " "))
		}
	}
	return out
}

// Ctrl-C of `terraform plan` during a node-path benchmark stops fio on the node: no fio process
// is left doing I/O in the node path afterwards, although the job had ten minutes to run.
func TestAccStorageBenchmark_interruptNodePath(t *testing.T) {
	e := benchtest.Setup(t)
	sshd := acctest.StartSSHD(t)
	dir := t.TempDir()
	run := devCLI(t, acctest.ProviderConfigSSH(sshd, e.Node))(fmt.Sprintf(`
data "clusterstorage_storage_benchmark" "test" {
  node_path = %q
  node      = %q
  namespace = %q
  num_jobs  = 2
  runtime   = "10m"
  size      = "16M"
}
`, dir, e.Node, e.NS))
	// fio's job threads do I/O once its files exist.
	run.WaitFor(t, "fio to run on the node", 3*time.Minute, func() bool {
		files, _ := filepath.Glob(filepath.Join(dir, ".clusterstorage-benchmark-*", "*"))
		return len(files) >= 2 && len(fioProcesses(dir)) > 0
	})
	t.Logf("fio on the node before Ctrl-C: %v", fioProcesses(dir))
	start := time.Now()
	run.Signal(t, syscall.SIGINT)
	err := run.Wait(t, 2*time.Minute)
	t.Logf("terraform exited %s after Ctrl-C: %v", time.Since(start).Round(10*time.Millisecond), err)
	if left := fioProcesses(dir); len(left) > 0 {
		t.Errorf("fio still runs on the node after the cancel: %v", left)
	}
	if err := benchtest.NoRunDirs(dir); err != nil {
		t.Error(err)
	}
}

// A provider killed (SIGKILL, with its terraform) while fio runs leaves its pod and claim; their
// heartbeat stops, and the next benchmark in that namespace started once it is stale (seconds
// later, while the killed run's own deadline is still minutes ahead) removes them with a warning,
// and the static volume is Available again.
func TestAccStorageBenchmark_sweepAfterKill(t *testing.T) {
	e := benchtest.Setup(t)
	class := e.Class()
	pv, dir := e.LocalPV(class, "")
	start := devCLI(t, acctest.ProviderConfig())
	killRun(t, e, start, class, dir)
	ctx := context.Background()
	sel := metav1.ListOptions{LabelSelector: benchmark.LabelRun}
	pods, err := e.Client.CoreV1().Pods(e.NS).List(ctx, sel)
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("want the killed run's pod left, got %v %v", pods, err)
	}
	left := pods.Items[0]
	id := left.Labels[benchmark.LabelRun]
	expires, err := time.Parse(time.RFC3339, left.Annotations[benchmark.AnnotationExpires])
	if err != nil {
		t.Fatalf("pod %s has no expiry: %v", left.Name, left.Annotations)
	}
	claims, err := e.Client.CoreV1().PersistentVolumeClaims(e.NS).List(ctx, sel)
	if err != nil || len(claims.Items) != 1 {
		t.Fatalf("want the killed run's claim left, got %v %v", claims, err)
	}
	// The newest heartbeat of the two, read after the kill: the sweep may remove them once both
	// are stale.
	var beat time.Time
	for _, ann := range []map[string]string{left.Annotations, claims.Items[0].Annotations} {
		b, err := time.Parse(time.RFC3339Nano, ann[benchmark.AnnotationHeartbeat])
		if err != nil {
			t.Fatalf("the killed run's objects carry no heartbeat: %v", ann)
		}
		if b.After(beat) {
			beat = b
		}
	}
	stale := beat.Add(benchmark.HeartbeatStale + time.Second)
	t.Logf("run %s left pod and claim; last heartbeat %s, stale at %s, expiring at %s", id, beat.Format(time.RFC3339Nano), stale.Format(time.RFC3339), expires.Format(time.RFC3339))
	if err := kube.Poll(ctx, 200*time.Millisecond, time.Until(stale)+time.Second, "the killed run's heartbeat to go stale", func(context.Context) (bool, string, error) {
		return time.Now().After(stale), "", nil
	}); err != nil {
		t.Fatal(err)
	}
	if time.Until(expires) < 10*time.Minute {
		t.Fatalf("the killed run's expiry %s is near: the sweep below would not prove the heartbeat", expires)
	}
	second := start(fmt.Sprintf(`
data "clusterstorage_storage_benchmark" "test" {
  storage_class = %q
  namespace     = %q
  node          = %q
  runtime       = "1s"
  size          = "16M"
%s}
`, class, e.NS, e.Node, benchtest.PodAttributes()))
	if err := second.Wait(t, 3*time.Minute); err != nil {
		t.Fatalf("the second run failed: %v\n%s", err, second.Output())
	}
	out := second.Output()
	for _, want := range []string{"Removed what a killed benchmark left", "run " + id + ": pod clusterstorage-benchmark-" + id, "claim clusterstorage-benchmark-" + id} {
		if !strings.Contains(strings.Join(strings.Fields(out), " "), want) {
			t.Errorf("the second run does not say %q:\n%s", want, out)
		}
	}
	for _, err := range []error{e.NoLeftovers(false), e.VolumeAvailable(pv), benchtest.NoRunDirs(dir)} {
		if err != nil {
			t.Error(err)
		}
	}
}

// A pod whose image can never be pulled fails as soon as its events show the pull failing again,
// not when the read times out.
func TestAccStorageBenchmark_imageNeverPulls(t *testing.T) {
	e := benchtest.Setup(t)
	if !acctest.LocalCluster() {
		t.Skip("needs the local cluster, whose node has no registry to pull from")
	}
	class := e.Class()
	e.LocalPV(class, "")
	var began time.Time
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{
			{
				PreConfig: func() { began = time.Now() },
				Config: acctest.ProviderConfig() + fmt.Sprintf(`
data "clusterstorage_storage_benchmark" "test" {
  storage_class     = %q
  namespace         = %q
  node              = %q
  image             = "localhost:1/clusterstorage/no-such-fio:1"
  image_pull_policy = "IfNotPresent"
  runtime           = "1s"
  size              = "16M"
  timeouts = {
    read = "10m"
  }
}
`, class, e.NS, e.Node),
				ExpectError: acctest.ErrorRegexp(`its image could not be pulled \(\d+ times\)`),
			},
			{
				PreConfig: func() {
					took := time.Since(began)
					t.Logf("the read failed after %s", took.Round(time.Second))
					if took > 2*time.Minute {
						t.Errorf("the read took %s, not failing when the pull failed again", took)
					}
					if err := e.NoLeftovers(false); err != nil {
						t.Error(err)
					}
				},
				Config:   acctest.ProviderConfig(),
				PlanOnly: true,
			},
		},
	})
}

// killRun starts a pod benchmark of ten minutes on class (a class of one static volume whose
// directory is dir) and kills the provider and terraform (SIGKILL) once fio writes there.
func killRun(t *testing.T, e *benchtest.Env, start func(string) *acctest.CLIRun, class, dir string) {
	t.Helper()
	run := start(fmt.Sprintf(`data "clusterstorage_storage_benchmark" "test" {
  storage_class = %q
  namespace     = %q
  node          = %q
  runtime       = "10m"
  size          = "16M"
  timeouts = {
    read = "15m"
  }
%s}
`, class, e.NS, e.Node, benchtest.PodAttributes()))
	run.WaitFor(t, "fio to run in its pod", 3*time.Minute, func() bool {
		files, _ := filepath.Glob(filepath.Join(dir, ".clusterstorage-benchmark-*", "*"))
		return len(files) > 0
	})
	run.Kill(t)
	_ = run.Wait(t, time.Minute) //nolint:errcheck // killed
}

// TestAccStorageBenchmark_rerunRightAfterKill: the same plan run again at once after a provider
// was killed during a pod benchmark on a class with one static volume: the killed run's claim
// still holds the volume and its heartbeat is not stale yet, so the first sweep leaves it. The
// new run's claim waits; while it waits the run sweeps again, removes the killed run once its
// heartbeat is stale, the volume is Available again and the benchmark succeeds, long before its
// read timeout (two minutes here).
func TestAccStorageBenchmark_rerunRightAfterKill(t *testing.T) {
	e := benchtest.Setup(t)
	class := e.Class()
	pv, dir := e.LocalPV(class, "")
	start := devCLI(t, acctest.ProviderConfig())
	killRun(t, e, start, class, dir)
	second := start(fmt.Sprintf(`
data "clusterstorage_storage_benchmark" "test" {
  storage_class = %q
  namespace     = %q
  node          = %q
  runtime       = "1s"
  size          = "16M"
  timeouts = {
    read = "2m"
  }
%s}
`, class, e.NS, e.Node, benchtest.PodAttributes()))
	if err := second.Wait(t, 3*time.Minute); err != nil {
		t.Fatalf("the run right after the killed one failed: %v\n%s", err, second.Output())
	}
	for _, err := range []error{e.NoLeftovers(false), e.VolumeAvailable(pv), benchtest.NoRunDirs(dir)} {
		if err != nil {
			t.Error(err)
		}
	}
}
