package comparison_test

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest/benchtest"
)

const cmpAddr = "data.clusterstorage_storage_comparison.test"

// The comparison on the real cluster: a local-PV class, the local-path dynamic class and
// the node's disk (over SSH), in two short interleaved rounds. Every target has medians and a
// spread, the baseline's ratio to itself is 1, the local-path target reports the memory of the
// provisioner's pods (working set when the cluster serves the metrics API), and nothing is left.
func TestAccStorageComparison_threeTargets(t *testing.T) {
	// Parallel before NeedLocalPath takes its lock: a test waiting for it in the serial phase
	// would block the paused test that holds it.
	t.Parallel()
	e := benchtest.Setup(t)
	class := e.Class()
	pv, pvDir := e.LocalPV(class, "")
	e.NeedLocalPath()
	sshd := acctest.StartSSHD(t)
	diskDir := t.TempDir()
	metricsAPI := metricsServed(t, e)
	var usage knownvalue.Check = knownvalue.Null()
	if metricsAPI {
		usage = knownvalue.Int64Func(func(v int64) error {
			if v <= 0 {
				return fmt.Errorf("usage_bytes = %d, want the provisioner's working set", v)
			}
			return nil
		})
	}
	t.Logf("metrics API served: %v", metricsAPI)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{{
			Config: acctest.ProviderConfigSSH(sshd, e.Node) + fmt.Sprintf(`
data "clusterstorage_storage_comparison" "test" {
  targets = {
    disk       = { node_path = %q }
    local_pv   = { storage_class = %q }
    local_path = { storage_class = "local-path", backend_namespace = "local-path-storage" }
  }
  baseline  = "disk"
  rounds    = 2
  node      = %q
  namespace = %q
  runtime   = "1s"
  size      = "16M"
%s}
`, diskDir, class, e.Node, e.NS, benchtest.PodAttributes()),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(cmpAddr, tfjsonpath.New("order"), knownvalue.ListExact([]knownvalue.Check{
					knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("disk"), knownvalue.StringExact("local_path"), knownvalue.StringExact("local_pv")}),
					knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("local_path"), knownvalue.StringExact("local_pv"), knownvalue.StringExact("disk")}),
				})),
				statecheck.ExpectKnownValue(cmpAddr, tfjsonpath.New("rounds"), knownvalue.Int64Exact(2)),
				statecheck.ExpectKnownValue(cmpAddr, tfjsonpath.New("profile"), knownvalue.StringExact("database")),
				statecheck.ExpectKnownValue(cmpAddr, tfjsonpath.New("metrics_api"), knownvalue.Bool(metricsAPI)),
				statecheck.ExpectKnownValue(cmpAddr, tfjsonpath.New("results").AtMapKey("disk").AtMapKey("kind"), knownvalue.StringExact("node_path")),
				statecheck.ExpectKnownValue(cmpAddr, tfjsonpath.New("results").AtMapKey("disk").AtMapKey("vs_baseline").AtMapKey("read_iops"),
					knownvalue.ObjectExact(map[string]knownvalue.Check{"ratio": knownvalue.Float64Exact(1), "significant": knownvalue.Bool(false)})),
				statecheck.ExpectKnownValue(cmpAddr, tfjsonpath.New("results").AtMapKey("local_pv").AtMapKey("memory"), knownvalue.Null()),
				statecheck.ExpectKnownValue(cmpAddr, tfjsonpath.New("results").AtMapKey("local_path").AtMapKey("memory").AtMapKey("namespace"), knownvalue.StringExact("local-path-storage")),
				statecheck.ExpectKnownValue(cmpAddr, tfjsonpath.New("results").AtMapKey("local_path").AtMapKey("memory").AtMapKey("pods"), knownvalue.Int64Func(func(v int64) error {
					if v < 1 {
						return fmt.Errorf("pods = %d, want the provisioner's", v)
					}
					return nil
				})),
				statecheck.ExpectKnownValue(cmpAddr, tfjsonpath.New("results").AtMapKey("local_path").AtMapKey("memory").AtMapKey("usage_bytes"), usage),
				// Every target ran on the comparison's node.
				statecheck.ExpectKnownValue(cmpAddr, tfjsonpath.New("table"), knownvalue.StringRegexp(regexp.MustCompile(
					`(?s)^fio database +disk +local_path +local_pv\nnode( +`+regexp.QuoteMeta(e.Node)+`){3}\nread IOPS +\d+ ±\d+% +\d+ ±\d+% +\d+ ±\d+%\n.*read IOPS vs disk +1\.00x +\d+\.\d\dx( ~)? +\d+\.\d\dx( ~)?\n.*memory \(working set\) +0 MiB +(\d+ MiB|no metrics API) +0 MiB\n`))),
				comparisonPlausible([]string{"disk", "local_path", "local_pv"}, 2),
				logTable(t),
			},
			Check: resource.ComposeTestCheckFunc(
				benchtest.Check(func() error { return e.NoLeftovers(false) }),
				benchtest.Check(func() error { return e.VolumeAvailable(pv) }),
				benchtest.Check(func() error { return benchtest.NoRunDirs(pvDir) }),
				benchtest.Check(func() error { return benchtest.NoRunDirs(diskDir) }),
			),
		}},
	})
}

// A target that really is served by memory (a local volume on tmpfs, whose fdatasync does not
// reach a disk) against the node's disk, with the fsync profile (buffered writes, each followed
// by fdatasync): the comparison warns that it is faster than its raw-disk baseline, probably a cache.
func TestAccStorageComparison_cacheWarning(t *testing.T) {
	e := benchtest.Setup(t)
	if fi, err := os.Stat("/dev/shm"); err != nil || !fi.IsDir() {
		t.Skip("no /dev/shm (tmpfs) on the node for a memory-backed volume")
	}
	if !acctest.LocalCluster() {
		t.Skip("needs the local cluster: its node is this machine, whose /dev/shm holds the memory-backed volume")
	}
	class := e.Class()
	shmDir, err := os.MkdirTemp("/dev/shm", "acc-bench-") //nolint:usetesting // the volume must be on tmpfs, which t.TempDir is not
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(shmDir) }) //nolint:errcheck // best effort
	e.LocalPV(class, shmDir)
	sshd := acctest.StartSSHD(t)
	diskDir := t.TempDir()
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{{
			Config: acctest.ProviderConfigSSH(sshd, e.Node) + fmt.Sprintf(`
data "clusterstorage_storage_comparison" "test" {
  targets = {
    disk   = { node_path = %q }
    memory = { storage_class = %q }
  }
  baseline  = "disk"
  rounds    = 2
  node      = %q
  namespace = %q
  profile   = "fsync"
  runtime   = "2s"
  size      = "16M"
%s}
`, diskDir, class, e.Node, e.NS, benchtest.PodAttributes()),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(cmpAddr, tfjsonpath.New("direct"), knownvalue.Bool(false)),
				statecheck.ExpectKnownValue(cmpAddr, tfjsonpath.New("warnings"), knownvalue.ListPartial(map[int]knownvalue.Check{
					0: knownvalue.StringRegexp(regexp.MustCompile(`^Target "memory" is faster than its baseline "disk", the node's disk it sits on, beyond the spread of 2 rounds \(write IOPS \d+\.\d\dx.*probably a cache`)),
				})),
				statecheck.ExpectKnownValue(cmpAddr, tfjsonpath.New("results").AtMapKey("memory").AtMapKey("vs_baseline").AtMapKey("write_iops").AtMapKey("significant"), knownvalue.Bool(true)),
			},
			Check: benchtest.Check(func() error { return e.NoLeftovers(false) }),
		}},
	})
}

// Bad input is refused at plan, at the attribute that is wrong.
func TestAccStorageComparison_badInput(t *testing.T) {
	acctest.Kube(t)
	data := func(body string) string {
		return acctest.ProviderConfig() + "data \"clusterstorage_storage_comparison\" \"test\" {\n" + body + "\n}\n"
	}
	steps := []resource.TestStep{}
	for _, c := range []struct{ body, want string }{
		{`  targets = {}
  baseline = "a"`, `Attribute targets map must contain at least 1 elements`},
		{`  targets = { a = { storage_class = "x" } }
  baseline = "b"`, `baseline "b" is not one of the targets \(a\)`},
		{`  targets = { a = { storage_class = "x" } }
  baseline = "a"
  rounds = 0`, `Attribute rounds value must be between 1 and 20, got: 0`},
		{`  targets = { a = { storage_class = "x", claim = "y" } }
  baseline = "a"`, `Target "a" must set exactly one of storage_class, claim and node_path`},
		{`  targets = { a = { node_path = "/mnt" } }
  baseline = "a"`, `node required with node_path.*set node to the Kubernetes node`},
		{`  targets = { a = { storage_class = "x" } }
  baseline = "a"
  runtime = "2h"`, `must be between 1s and 1h`},
	} {
		steps = append(steps, resource.TestStep{Config: data(c.body), ExpectError: acctest.ErrorRegexp(c.want), PlanOnly: true})
	}
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps:                    steps,
	})
}

// Targets built by an expression that is unknown until apply (a for over a resource's outputs,
// merged, as examples/quickstart does over a variable) plan without an error; they are checked
// when they are known.
func TestAccStorageComparison_targetsUnknownAtPlan(t *testing.T) {
	acctest.RunsUnder(t, acctest.EveryCLI)
	acctest.Kube(t)
	config := acctest.ProviderConfig() + `
resource "terraform_data" "class" {
  input = "some-class"
}

data "clusterstorage_storage_comparison" "test" {
  targets = merge(
    { disk = { node_path = "/mnt", node = "n1" } },
    { pv = { storage_class = terraform_data.class.id, node = "n1" } },
    { for name in toset([terraform_data.class.id]) : "class ${name}" => { storage_class = name } },
  )
  baseline = "disk"
}
`
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{{
			Config: config, PlanOnly: true, ExpectNonEmptyPlan: true,
		}},
	})
}

// logTable logs the comparison's table and warnings.
func logTable(t *testing.T) statecheck.StateCheck {
	return acctest.CheckValues(cmpAddr, func(values map[string]any) error {
		t.Logf("table:\n%v\nwarnings: %v", values["table"], values["warnings"])
		return nil
	})
}

// metricsServed reports whether the cluster serves metrics.k8s.io.
func metricsServed(t *testing.T, e *benchtest.Env) bool {
	t.Helper()
	_, err := e.Client.Discovery().ServerResourcesForGroupVersion("metrics.k8s.io/v1beta1")
	return err == nil
}

// comparisonPlausible checks every target's result: the rounds, I/O in both directions, and a
// spread that holds the median.
func comparisonPlausible(names []string, rounds int) statecheck.StateCheck {
	return acctest.CheckValues(cmpAddr, func(values map[string]any) error {
		results, _ := values["results"].(map[string]any)
		var errs []error
		for _, name := range names {
			r, _ := results[name].(map[string]any)
			if r == nil {
				errs = append(errs, fmt.Errorf("no result for %s", name))
				continue
			}
			if n := acctest.Number(r["rounds"]); n != float64(rounds) {
				errs = append(errs, fmt.Errorf("%s: rounds = %v", name, n))
			}
			if err := benchtest.PlausibleIn(map[string]any{
				"read": r["read"], "write": r["write"], "fio_version": "fio-3", "runtime_seconds": 1.0, "measured_at": nowRFC3339(),
			}, true, true); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
			}
			if s, _ := r["summary"].(string); !strings.Contains(s, fmt.Sprintf("; %d rounds: read IOPS", rounds)) {
				errs = append(errs, fmt.Errorf("%s: summary %q", name, s))
			}
			if err := benchtest.SpreadHoldsIn(r, "read", "iops", "read_iops"); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
			}
		}
		return errors.Join(errs...)
	})
}

func nowRFC3339() string { return time.Now().UTC().Format(time.RFC3339) }
