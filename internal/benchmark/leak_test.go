package benchmark_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
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
	e := setup(t)
	class := e.class()
	full := smallFilesystem(t)
	pv, _ := e.localPV(class, full)
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
`, class, e.ns, podAttributes()),
				ExpectError: acctest.ErrorRegexp(noSpace),
			},
			{
				PreConfig: func() {
					for _, err := range []error{e.noLeftovers(false), noRunDirs(full), e.volumeAvailable(pv)} {
						if err != nil {
							t.Fatal(err)
						}
					}
				},
				Config: acctest.ProviderConfigSSH(sshd, e.node) + fmt.Sprintf(`
data "clusterstorage_storage_benchmark" "test" {
  node_path = %q
  node      = %q
  namespace = %q
  runtime   = "2s"
  size      = "64M"
}
`, full, e.node, e.ns),
				ExpectError: acctest.ErrorRegexp(noSpace),
			},
			{
				PreConfig: func() {
					if err := noRunDirs(full); err != nil {
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
  host_network      = true
  runtime           = "2s"
  size              = "1M"
}
`, class, e.ns),
				ExpectError: acctest.ErrorRegexp(`fio: not found on the PATH of this image`),
			},
			{
				PreConfig: func() {
					if err := e.noLeftovers(false); err != nil {
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
	e := setup(t)
	class := e.class()
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
`, class, e.ns, podAttributes(), short),
				ExpectError: acctest.ErrorRegexp(`timed out after .* waiting for pod .* to start: pod is Pending.*Events of pod .*(FailedScheduling|WaitForFirstConsumer|persistent volume)`),
			},
			{
				PreConfig: func() {
					if err := e.noLeftovers(false); err != nil {
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

// localPathClass is the class of rancher/local-path-provisioner.
const localPathClass = "local-path"

// needLocalPath makes sure the cluster has localPathClass: the cluster's own, or the provisioner
// deployed from testdata (on the local cluster, whose node has the image), removed when the test
// ends. It holds acctest.LockLocalPath until then, so that a test running at the same time does
// not use the provisioner while another removes it: call it from a test that runs in parallel
// already (t.Parallel first), or it blocks the serial phase. It skips the test when neither is
// possible.
func needLocalPath(t *testing.T, e *env) {
	t.Helper()
	ctx := context.Background()
	acctest.LockCluster(t, e.client, acctest.LockLocalPath)
	if _, err := e.client.StorageV1().StorageClasses().Get(ctx, localPathClass, metav1.GetOptions{}); err == nil {
		return
	}
	const image = "localhost/clusterstorage/local-path-provisioner:v0.0.30"
	kubectl := filepath.Join(acctest.RepoRoot(), "bin", "kube")
	if !acctest.LocalCluster() {
		t.Skip(`the cluster has no "local-path" storage class: install rancher/local-path-provisioner to run this test`)
	}
	if _, err := os.Stat(kubectl); err != nil {
		t.Skipf("no %s to deploy rancher/local-path-provisioner with: run tools/kube/cluster.sh up", kubectl)
	}
	n, err := e.client.CoreV1().Nodes().Get(ctx, e.node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, img := range n.Status.Images {
		for _, name := range img.Names {
			found = found || name == image
		}
	}
	if !found {
		t.Skipf("image %s is not on node %s: tools/kube/cluster.sh up builds it when tools/kube/localpath exists", image, e.node)
	}
	manifest, err := os.ReadFile(filepath.Join("testdata", "local-path-provisioner.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	manifest = bytes.ReplaceAll(manifest, []byte("__LOCAL_PATH_DIR__"), []byte(dir))
	run := func(args ...string) {
		cmd := exec.Command(kubectl, append([]string{"kubectl", "--kubeconfig", acctest.Kubeconfig()}, args...)...)
		cmd.Stdin = bytes.NewReader(manifest)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("kubectl %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	run("apply", "-f", "-")
	t.Cleanup(func() { run("delete", "--ignore-not-found", "--wait=true", "-f", "-") })
	err = kube.Poll(ctx, 250*time.Millisecond, 2*time.Minute, "local-path-provisioner to be available", func(ctx context.Context) (bool, string, error) {
		d, err := e.client.AppsV1().Deployments("local-path-storage").Get(ctx, "local-path-provisioner", metav1.GetOptions{})
		if kube.IsNotFound(err) {
			return false, "the Deployment is not there yet", nil
		}
		if err != nil {
			return false, "", err
		}
		return available(d), fmt.Sprintf("%d of %d replicas available", d.Status.AvailableReplicas, d.Status.Replicas), nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func available(d *appsv1.Deployment) bool {
	return d.Status.AvailableReplicas > 0
}
