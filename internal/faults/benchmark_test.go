package faults_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest/benchtest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/benchmark"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

// The benchmark workloads are one clusterstorage_storage_benchmark read by an apply: fio for
// benchRuntime in a pod on a claim of a class whose one static local volume is on node 1 ("bench"),
// or over SSH on a directory of node 1 ("benchpath"). A data source leaves nothing in the state;
// what a row checks is what its runs leave on the cluster and the node: the run's pod, claim and
// run directory, the static volume Available again.
const benchRuntime = "20s"

// benchFixture is a benchmark row's slice of the cluster: a namespace, the directory fio writes
// below, and for a pod benchmark the class and its static volume.
type benchFixture struct {
	env       *benchtest.Env
	dir, pv   string
	configure string
}

func newBenchFixture(t *testing.T, e env, wl workload) *benchFixture {
	t.Helper()
	f := &benchFixture{env: benchtest.Setup(t)}
	if wl.kind == "benchpath" {
		// Not t.TempDir(): the row's name puts parentheses in it, which node_path refuses.
		dir, err := os.MkdirTemp("", "fault-bench-") //nolint:usetesting // t.TempDir() holds the row name's parentheses
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(dir) }) //nolint:errcheck // under the system's temporary directory
		f.dir = dir
		f.configure = acctest.ProviderConfigNodes(e.node) + fmt.Sprintf(`
data "clusterstorage_storage_benchmark" "b" {
  node_path = %q
  node      = %q
  namespace = %q
  runtime   = %q
  size      = "16M"
}
`, f.dir, e.node.Name, f.env.NS, benchRuntime)
		return f
	}
	class := f.env.Class()
	f.pv, f.dir = f.env.LocalPV(class, "")
	f.configure = acctest.ProviderConfig() + fmt.Sprintf(`
data "clusterstorage_storage_benchmark" "b" {
  storage_class = %q
  namespace     = %q
  node          = %q
  runtime       = %q
  size          = "16M"
%s}
`, class, f.env.NS, f.env.Node, benchRuntime, benchtest.PodAttributes())
	return f
}

// running is whether fio runs: its run directory holds its files.
func (f *benchFixture) running() bool {
	files, _ := filepath.Glob(filepath.Join(f.dir, ".clusterstorage-benchmark-*", "*")) //nolint:errcheck // the pattern is valid
	return len(files) > 0
}

// leftovers adds what a run left to found: pods and claims of a run (pod/NAME, claim/NAME), run
// directories (dir/NAME), and the static volume when it is not Available again (pv/NAME). The API
// server may be coming back from a fault: it is polled.
func (f *benchFixture) leftovers(t *testing.T, found objects) {
	t.Helper()
	sel := metav1.ListOptions{LabelSelector: benchmark.LabelRun}
	err := kube.Poll(context.Background(), 200*time.Millisecond, 2*time.Minute, "listing what the benchmark left", func(ctx context.Context) (bool, string, error) {
		pods, err := f.env.Client.CoreV1().Pods(f.env.NS).List(ctx, sel)
		if err != nil {
			return kube.KeepPolling(err)
		}
		claims, err := f.env.Client.CoreV1().PersistentVolumeClaims(f.env.NS).List(ctx, sel)
		if err != nil {
			return kube.KeepPolling(err)
		}
		for _, p := range pods.Items {
			found["pod/"+p.Name] = ""
		}
		for _, c := range claims.Items {
			found["claim/"+c.Name] = ""
		}
		return true, "", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	dirs, _ := filepath.Glob(filepath.Join(f.dir, ".clusterstorage-benchmark-*")) //nolint:errcheck // the pattern is valid
	for _, d := range dirs {
		found["dir/"+filepath.Base(d)] = ""
	}
	if f.pv != "" {
		if err := f.env.VolumeAvailable(f.pv); err != nil {
			found["pv/"+f.pv] = ""
		}
	}
}

// capacityConfig reads the capacity of / on every node of the cluster, over SSH.
func capacityConfig(t *testing.T) string {
	t.Helper()
	return acctest.ProviderConfigNodes(acctest.Nodes(t)...) + `
data "clusterstorage_storage_capacity" "c" {
  node_path = "/"
}
`
}
