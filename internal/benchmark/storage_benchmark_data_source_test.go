package benchmark_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest/benchtest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/benchmark"
)

// short is a job that runs long enough to measure and no longer.
const short = `  runtime = "2s"
  size    = "16M"
`

// A StorageClass without a provisioner and a local volume: the claim binds when the pod is
// scheduled (WaitForFirstConsumer), and the volume is Available again after each run, so every
// plan can run fio on it. The second config caches the result, and the third reads the cache.
func TestAccStorageBenchmark_storageClass(t *testing.T) {
	acctest.RunsUnder(t, acctest.EveryCLI)
	e := benchtest.Setup(t)
	class := e.Class()
	pv, dir := e.LocalPV(class, "")
	config := func(extra string) string {
		return acctest.ProviderConfig() + fmt.Sprintf(`
data "clusterstorage_storage_benchmark" "test" {
  storage_class = %q
  namespace     = %q
  node          = %q
%s%s%s}
`, class, e.NS, e.Node, benchtest.PodAttributes(), short, extra)
	}
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: config(""),
				ConfigStateChecks: []statecheck.StateCheck{
					plausible(true, true),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("cached"), knownvalue.Bool(false)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("profile"), knownvalue.StringExact("database")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("rw"), knownvalue.StringExact("randrw")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("io_depth"), knownvalue.Int64Exact(16)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("volume_size"), knownvalue.StringExact("1Gi")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("raw_json"), knownvalue.Null()),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("summary"), knownvalue.StringRegexp(regexp.MustCompile(`^read \d+ IOPS .* p99 .*; write \d+ IOPS`))),
				},
				Check: resource.ComposeTestCheckFunc(
					benchtest.Check(func() error { return e.NoLeftovers(false) }),
					benchtest.Check(func() error { return e.VolumeAvailable(pv) }),
					benchtest.Check(func() error { return benchtest.NoRunDirs(dir) }),
				),
			},
			{
				Config: config("  max_age = \"1h\"\n  include_raw_json = true\n"),
				ConfigStateChecks: []statecheck.StateCheck{
					plausible(true, true),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("raw_json"), knownvalue.StringRegexp(regexp.MustCompile(`^\{"fio version":"fio-3`))),
				},
				Check: benchtest.Check(func() error { return e.NoLeftovers(true) }),
			},
			{
				// Same target and job: the plan reads the cached result and runs nothing.
				Config: config("  max_age = \"1h\"\n  include_raw_json = true\n"),
				ConfigStateChecks: []statecheck.StateCheck{
					plausible(true, true),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("cached"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("raw_json"), knownvalue.NotNull()),
				},
				Check: benchtest.Check(func() error {
					cms, err := e.Client.CoreV1().ConfigMaps(e.NS).List(context.Background(), metav1.ListOptions{LabelSelector: benchmark.LabelCache})
					if err != nil {
						return err
					}
					if len(cms.Items) != 1 {
						return fmt.Errorf("%d cache ConfigMaps, want 1", len(cms.Items))
					}
					return e.NoLeftovers(true)
				}),
			},
			{
				// The cached result is older than a shorter max_age (fio alone ran 2 s): fio runs again.
				Config: config("  max_age = \"1s\"\n"),
				ConfigStateChecks: []statecheck.StateCheck{
					plausible(true, true),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("cached"), knownvalue.Bool(false)),
				},
			},
			{
				// Another job is another key: fio runs again.
				Config: config("  max_age = \"1h\"\n  profile = \"random_read\"\n"),
				ConfigStateChecks: []statecheck.StateCheck{
					plausible(true, false),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("cached"), knownvalue.Bool(false)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("io_depth"), knownvalue.Int64Exact(64)),
				},
			},
		},
	})
}

// An existing claim: fio works in a directory of its own and leaves the claim's data alone.
func TestAccStorageBenchmark_claim(t *testing.T) {
	e := benchtest.Setup(t)
	class := e.Class()
	pv, dir := e.LocalPV(class, "")
	existing := filepath.Join(dir, "existing.db")
	if err := os.WriteFile(existing, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	claim := e.Claim(class, pv)
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{{
			Config: acctest.ProviderConfig() + fmt.Sprintf(`
data "clusterstorage_storage_benchmark" "test" {
  claim     = %q
  namespace = %q
  profile   = "fsync"
%s%s}
`, claim, e.NS, benchtest.PodAttributes(), short),
			ConfigStateChecks: []statecheck.StateCheck{
				plausible(false, true),
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("sync").AtMapKey("count"), knownvalue.Int64Func(func(v int64) error {
					if v <= 0 {
						return fmt.Errorf("no fdatasync calls counted")
					}
					return nil
				})),
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("volume_size"), knownvalue.Null()),
			},
			Check: resource.ComposeTestCheckFunc(
				benchtest.Check(func() error { return e.NoLeftovers(false) }),
				benchtest.Check(func() error { return benchtest.NoRunDirs(dir) }),
				benchtest.Check(func() error {
					b, err := os.ReadFile(existing)
					if err != nil || string(b) != "precious" {
						return fmt.Errorf("the claim's own data changed: %q, %v", b, err)
					}
					return nil
				}),
				benchtest.Check(func() error {
					_, err := e.Client.CoreV1().PersistentVolumeClaims(e.NS).Get(context.Background(), claim, metav1.GetOptions{})
					return err
				}),
			),
		}},
	})
}

// A directory on the node over SSH: the node is this machine, reached through a test sshd.
func TestAccStorageBenchmark_nodePath(t *testing.T) {
	acctest.RunsUnder(t, acctest.OldestTerraform)
	e := benchtest.Setup(t)
	sshd := acctest.StartSSHD(t)
	dir := t.TempDir()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// badPath is a run on a node_path that is refused before fio runs.
	badPath := func(nodePath string) string {
		return acctest.ProviderConfigSSH(sshd, e.Node) + fmt.Sprintf(`
data "clusterstorage_storage_benchmark" "test" {
  node_path = %q
  node      = %q
  namespace = %q
%s}
`, nodePath, e.Node, e.NS, short)
	}
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: acctest.ProviderConfigSSH(sshd, e.Node) + fmt.Sprintf(`
data "clusterstorage_storage_benchmark" "test" {
  node_path = %q
  node      = %q
  namespace = %q
  profile   = "sequential_write"
%s}
`, dir, e.Node, e.NS, short),
				ConfigStateChecks: []statecheck.StateCheck{
					plausible(false, true),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("block_size"), knownvalue.StringExact("1M")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("image"), knownvalue.Null()),
				},
				Check: resource.ComposeTestCheckFunc(
					benchtest.Check(func() error { return benchtest.NoRunDirs(dir) }),
					benchtest.Check(func() error { return e.NoLeftovers(false) }),
				),
			},
			{
				Config:      badPath(filepath.Join(dir, "missing")),
				ExpectError: acctest.ErrorRegexp(`node_path .*/missing does not exist on node`),
			},
			{
				Config:      badPath(file),
				ExpectError: acctest.ErrorRegexp(`node_path .*/file on node .* is not a directory \(mode -rw-------\)`),
			},
		},
	})
}

// rancher/local-path-provisioner: a real dynamic hostPath provisioner. Its volume is deleted by the
// provisioner after the run, and waited for.
func TestAccStorageBenchmark_localPathProvisioner(t *testing.T) {
	// Parallel before NeedLocalPath takes its lock: a test waiting for it in the serial phase
	// would block the paused test that holds it.
	t.Parallel()
	e := benchtest.Setup(t)
	e.NeedLocalPath()
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{{
			Config: acctest.ProviderConfig() + fmt.Sprintf(`
data "clusterstorage_storage_benchmark" "test" {
  storage_class = %q
  namespace     = %q
  profile       = "random_write"
%s%s}
`, benchtest.LocalPathClass, e.NS, benchtest.PodAttributes(), short),
			ConfigStateChecks: []statecheck.StateCheck{plausible(false, true)},
			Check: resource.ComposeTestCheckFunc(
				benchtest.Check(func() error { return e.NoLeftovers(false) }),
				benchtest.Check(func() error {
					pvs, err := e.Client.CoreV1().PersistentVolumes().List(context.Background(), metav1.ListOptions{})
					if err != nil {
						return err
					}
					for _, pv := range pvs.Items {
						if ref := pv.Spec.ClaimRef; ref != nil && ref.Namespace == e.NS {
							return fmt.Errorf("volume %s of a benchmark claim is still there (%s)", pv.Name, pv.Status.Phase)
						}
					}
					return nil
				}),
			),
		}},
	})
}

// Bad input is refused at plan time, before anything runs.
func TestAccStorageBenchmark_badInput(t *testing.T) {
	acctest.Kube(t)
	cases := []struct {
		body string
		want string
	}{
		{`storage_class = "a"
  claim = "b"`, `Set exactly one of storage_class, claim and node_path`},
		{`namespace = "default"`, `Set exactly one of storage_class, claim and node_path \(set: none\)`},
		{`node_path = "/mnt"`, `set node to the Kubernetes node`},
		{`node_path = "relative/dir"
  node = "n"`, `must be an absolute path`},
		{`storage_class = "a"
  block_size = "8q"`, `"8q" is not a size`},
		{`storage_class = "a"
  block_size = "1000"`, `must be a multiple of 512 bytes`},
		{`storage_class = "a"
  rw_mix_read = 101`, `rw_mix_read.*between 0 and 100`},
		{`storage_class = "a"
  rw = "randomrw"`, `value must be one of`},
		{`storage_class = "a"
  profile = "oltp"`, `value must be one of`},
		{`storage_class = "a"
  runtime = "0s"`, `must be between 1s and 1h`},
		{`storage_class = "a"
  runtime = "2h"`, `must be between 1s and 1h`},
		{`storage_class = "a"
  runtime = "soon"`, `is not a duration`},
		{`storage_class = "a"
  block_size = "4M"
  size = "2M"`, `block_size "4M" is larger than size "2M": each I/O must fit in the file`},
		{`claim = "c"
  volume_size = "1Gi"`, `volume_size sizes the temporary claim`},
		{`storage_class = "a"
  volume_size = "100Mi"`, `volume_size 100Mi is smaller than the 200M`},
		{`storage_class = "a"
  max_age = "-1h"`, `must not be negative`},
		{`storage_class = "Not_A_Name"`, `storage_class = "Not_A_Name" is not valid: a lowercase RFC 1123 subdomain`},
	}
	steps := make([]resource.TestStep, 0, len(cases))
	for _, c := range cases {
		steps = append(steps, resource.TestStep{
			Config:      acctest.ProviderConfig() + "data \"clusterstorage_storage_benchmark\" \"test\" {\n  " + c.body + "\n}\n",
			ExpectError: acctest.ErrorRegexp(c.want),
			PlanOnly:    true,
		})
	}
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps:                    steps,
	})
}

// Targets that do not exist are named, with what does exist.
func TestAccStorageBenchmark_missingTargets(t *testing.T) {
	e := benchtest.Setup(t)
	class := e.Class()
	pv, _ := e.LocalPV(class, "")
	claim := e.Claim(class, pv)
	data := func(body string) string {
		return acctest.ProviderConfig() + fmt.Sprintf("data \"clusterstorage_storage_benchmark\" \"test\" {\n  namespace = %q\n%s%s  %s\n}\n", e.NS, benchtest.PodAttributes(), short, body)
	}
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{
			{Config: data(`storage_class = "no-such-class"`), ExpectError: acctest.ErrorRegexp(`no storage class "no-such-class"; it has: .*` + class)},
			{Config: data(`claim = "no-such-claim"`), ExpectError: acctest.ErrorRegexp(`has no PersistentVolumeClaim "no-such-claim"; it has: ` + claim)},
			{Config: data(`storage_class = "` + class + `"
  node = "no-such-node"`), ExpectError: acctest.ErrorRegexp(`node "no-such-node" not found in the cluster; its nodes are: .*` + e.Node)},
			{Config: acctest.ProviderConfig() + fmt.Sprintf("data \"clusterstorage_storage_benchmark\" \"test\" {\n  node_path = \"/tmp\"\n  node = %q\n%s}\n", e.Node, short),
				ExpectError: acctest.ErrorRegexp(`the provider has no ssh block`)},
			{
				PreConfig: func() {
					if err := e.NoLeftovers(false); err != nil {
						t.Fatal(err)
					}
				},
				Config: data(`claim = "` + claim + `"`),
				Check:  benchtest.Check(func() error { return e.NoLeftovers(false) }),
			},
		},
	})
}
