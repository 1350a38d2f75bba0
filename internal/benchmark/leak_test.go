package benchmark_test

import (
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest/benchtest"
)

// smallFilesystem mounts an 8 MiB tmpfs on a new directory, so that fio runs out of space there.
func smallFilesystem(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=8m", "clusterstorage-bench-full", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small tmpfs (needs root): %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// noSpace is how a benchmark on a full filesystem fails: fio reports the job that hit ENOSPC, or,
// when laying out its file failed before the job started (seen once in make test, with fio's
// "pid=0, err=28/file:filesetup.c" line), no job at all; the error then quotes fio's ENOSPC lines.
const noSpace = `(fio job "database" failed with error 28: .*(No space left on device|ENOSPC)|fio reported no jobs[\s\S]*ENOSPC)`

// fio fails (no space for its file): the error carries fio's own message, and the pod, the claim
// and the run directory are gone; so is the run directory over SSH.
func TestAccStorageBenchmark_fioFailure(t *testing.T) {
	e := benchtest.Setup(t)
	class := e.Class()
	full := smallFilesystem(t)
	pv, _ := e.LocalPV(class, full)
	sshd := acctest.StartSSHD(t)
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: acctest.ProviderConfig() + fmt.Sprintf(`
data "clusterstorage_storage_benchmark" "test" {
  storage_class = %q
  namespace     = %q
  runtime       = "2s"
  size          = "64M"
  volume_size   = "1Gi"
%s}
`, class, e.NS, benchtest.PodAttributes()),
				ExpectError: acctest.ErrorRegexp(noSpace),
			},
			{
				PreConfig: func() {
					for _, err := range []error{e.NoLeftovers(false), benchtest.NoRunDirs(full), e.VolumeAvailable(pv)} {
						if err != nil {
							t.Fatal(err)
						}
					}
				},
				Config: acctest.ProviderConfigSSH(sshd, e.Node) + fmt.Sprintf(`
data "clusterstorage_storage_benchmark" "test" {
  node_path = %q
  node      = %q
  namespace = %q
  runtime   = "2s"
  size      = "64M"
}
`, full, e.Node, e.NS),
				ExpectError: acctest.ErrorRegexp(noSpace),
			},
			{
				PreConfig: func() {
					if err := benchtest.NoRunDirs(full); err != nil {
						t.Fatal(err)
					}
				},
				// Without fio on the PATH of the image: a clear message, nothing left. The busybox
				// image is the local cluster's.
				SkipFunc: func() (bool, error) { return !acctest.LocalCluster(), nil },
				Config: acctest.ProviderConfig() + fmt.Sprintf(`
data "clusterstorage_storage_benchmark" "test" {
  storage_class     = %q
  namespace         = %q
  image             = "localhost/clusterstorage/busybox:1"
  image_pull_policy = "Never"
  runtime           = "2s"
  size              = "1M"
}
`, class, e.NS),
				ExpectError: acctest.ErrorRegexp(`fio: not found on the PATH of this image`),
			},
			{
				PreConfig: func() {
					if err := e.NoLeftovers(false); err != nil {
						t.Fatal(err)
					}
				},
				Config:   acctest.ProviderConfig(),
				PlanOnly: true,
			},
		},
	})
}

// The claim can never bind (the class has no volumes): the read times out, the error quotes the
// Kubernetes events, and the pod and claim are deleted.
func TestAccStorageBenchmark_timeout(t *testing.T) {
	e := benchtest.Setup(t)
	class := e.Class()
	var start time.Time // when the read starts: the test waits paused until the serial tests end
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{
			{
				PreConfig: func() { start = time.Now() },
				Config: acctest.ProviderConfig() + fmt.Sprintf(`
data "clusterstorage_storage_benchmark" "test" {
  storage_class = %q
  namespace     = %q
  timeouts      = { read = "15s" }
%s%s}
`, class, e.NS, benchtest.PodAttributes(), short),
				ExpectError: acctest.ErrorRegexp(`timed out after .* waiting for pod .* to start: pod is Pending.*Events of pod .*(FailedScheduling|WaitForFirstConsumer|persistent volume)`),
			},
			{
				PreConfig: func() {
					if err := e.NoLeftovers(false); err != nil {
						t.Fatal(err)
					}
					if took := time.Since(start); took > 3*time.Minute {
						t.Errorf("the timed-out read took %s", took)
					}
				},
				Config:   acctest.ProviderConfig(),
				PlanOnly: true,
			},
		},
	})
}
