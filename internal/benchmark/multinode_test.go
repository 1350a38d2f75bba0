package benchmark_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest/benchtest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/benchmark"
)

// TestAccStorageBenchmark_onThirdNode: node = node 3 with a local volume on node 3's data disk:
// every fio pod the benchmark starts is scheduled onto node 3, and nothing is left on its disk.
func TestAccStorageBenchmark_onThirdNode(t *testing.T) {
	nodes := acctest.RequireNodes(t, 3)
	third := nodes[2]
	if len(third.DataDisks) == 0 {
		t.Fatalf("node %s has no data disk in %s", third.Name, acctest.NodesFile())
	}
	t.Setenv(acctest.NodeEnv, third.Name) // setup's node: the volume's
	e := benchtest.Setup(t)
	dir := filepath.Join(third.DataDisks[0], acctest.RandomName("acc-bench"))
	third.MustRun(t, `mkdir -p "$1"`, dir)
	t.Cleanup(func() { _, _ = third.Run(t, `rm -rf "$1"`, dir) }) //nolint:errcheck // best effort
	class := e.Class()
	pv, _ := e.LocalPV(class, dir)
	pods := watchRunPods(e)

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{{
			Config: acctest.ProviderConfig() + fmt.Sprintf(`
data "clusterstorage_storage_benchmark" "test" {
  storage_class = %q
  namespace     = %q
  node          = %q
%s%s}
`, class, e.NS, third.Name, benchtest.PodAttributes(), short),
			ConfigStateChecks: []statecheck.StateCheck{plausible(true, true)},
			Check: resource.ComposeTestCheckFunc(
				benchtest.Check(func() error {
					on := pods.nodes()
					if len(on) == 0 {
						return fmt.Errorf("no benchmark pod was seen scheduled")
					}
					for pod, n := range on {
						if n != third.Name {
							return fmt.Errorf("benchmark pod %s ran on %s, want %s", pod, n, third.Name)
						}
					}
					return nil
				}),
				benchtest.Check(func() error { return e.NoLeftovers(false) }),
				benchtest.Check(func() error { return e.VolumeAvailable(pv) }),
				benchtest.Check(func() error { return noRunDirsOn(t, third, dir) }),
			),
		}},
	})
}

// TestAccStorageBenchmark_nodePathOnThirdNode: node_path on node 3, reached over node 3's own
// sshd. The directory exists only on node 3's data disk, so a run anywhere else fails with
// "does not exist on node".
func TestAccStorageBenchmark_nodePathOnThirdNode(t *testing.T) {
	nodes := acctest.RequireNodes(t, 3)
	first, third := nodes[0], nodes[2]
	if len(third.DataDisks) == 0 {
		t.Fatalf("node %s has no data disk in %s", third.Name, acctest.NodesFile())
	}
	t.Setenv(acctest.NodeEnv, third.Name)
	e := benchtest.Setup(t)
	dir := filepath.Join(third.DataDisks[0], acctest.RandomName("acc-bench"))
	third.MustRun(t, `mkdir -p "$1"`, dir)
	t.Cleanup(func() { _, _ = third.Run(t, `rm -rf "$1"`, dir) }) //nolint:errcheck // best effort
	if first.Exists(t, dir) {
		t.Fatalf("%s exists on node %s too: the test cannot tell the nodes apart", dir, first.Name)
	}

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{{
			Config: acctest.ProviderConfigNodes(nodes...) + fmt.Sprintf(`
data "clusterstorage_storage_benchmark" "test" {
  node_path = %q
  node      = %q
  namespace = %q
  profile   = "sequential_write"
%s}
`, dir, third.Name, e.NS, short),
			ConfigStateChecks: []statecheck.StateCheck{plausible(false, true)},
			Check: resource.ComposeTestCheckFunc(
				benchtest.Check(func() error { return noRunDirsOn(t, third, dir) }),
				benchtest.Check(func() error { return e.NoLeftovers(false) }),
			),
		}},
	})
}

// noRunDirsOn checks that dir on node n holds no run directory of the benchmark.
func noRunDirsOn(t *testing.T, n acctest.ClusterNode, dir string) error {
	out, err := n.Run(t, `ls -A "$1"`, dir)
	if err != nil {
		return err
	}
	for _, f := range strings.Fields(out) {
		if strings.HasPrefix(f, ".clusterstorage-benchmark-") {
			return fmt.Errorf("run directory %s left in %s on node %s", f, dir, n.Name)
		}
	}
	return nil
}

// runPods records the node each benchmark pod of the namespace was scheduled onto, from a watch
// started before the test runs anything (the pods are deleted after each run).
type runPods struct {
	mu sync.Mutex
	on map[string]string
}

func (p *runPods) nodes() map[string]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]string, len(p.on))
	for k, v := range p.on {
		out[k] = v
	}
	return out
}

func (p *runPods) String() string {
	var s []string
	for pod, n := range p.nodes() {
		s = append(s, pod+"="+n)
	}
	sort.Strings(s)
	return strings.Join(s, ", ")
}

func watchRunPods(e *benchtest.Env) *runPods {
	e.T.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := e.Client.CoreV1().Pods(e.NS).Watch(ctx, metav1.ListOptions{LabelSelector: benchmark.LabelRun})
	if err != nil {
		cancel()
		e.T.Fatalf("watching benchmark pods: %v", err)
	}
	p := &runPods{on: map[string]string{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				continue
			}
			if pod, ok := ev.Object.(*corev1.Pod); ok && pod.Spec.NodeName != "" {
				p.mu.Lock()
				p.on[pod.Name] = pod.Spec.NodeName
				p.mu.Unlock()
			}
		}
	}()
	e.T.Cleanup(func() {
		w.Stop()
		cancel()
		<-done
		e.T.Logf("benchmark pods seen: %s", p)
	})
	return p
}
