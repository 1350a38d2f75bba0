package benchtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

// LocalPathClass is the class of rancher/local-path-provisioner.
const LocalPathClass = "local-path"

// NeedLocalPath makes sure the cluster has LocalPathClass: the cluster's own, or the provisioner
// deployed from testdata/local-path-provisioner.yaml (on the local cluster, whose node has the
// image), removed when the test ends. It holds acctest.LockLocalPath until then, so that a test
// running at the same time does not use the provisioner while another removes it: call it from a
// test that runs in parallel already (t.Parallel first), or it blocks the serial phase. It skips
// the test when neither is possible.
func (e *Env) NeedLocalPath() {
	t := e.T
	t.Helper()
	ctx := context.Background()
	acctest.LockCluster(t, e.Client, acctest.LockLocalPath)
	if _, err := e.Client.StorageV1().StorageClasses().Get(ctx, LocalPathClass, metav1.GetOptions{}); err == nil {
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
	n, err := e.Client.CoreV1().Nodes().Get(ctx, e.Node, metav1.GetOptions{})
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
		t.Skipf("image %s is not on node %s: tools/kube/cluster.sh up builds it when tools/kube/localpath exists", image, e.Node)
	}
	manifest, err := os.ReadFile(filepath.Join(acctest.RepoRoot(), "internal", "acctest", "benchtest", "testdata", "local-path-provisioner.yaml"))
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
		d, err := e.Client.AppsV1().Deployments("local-path-storage").Get(ctx, "local-path-provisioner", metav1.GetOptions{})
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

// available reports whether a Deployment has a replica available.
func available(d *appsv1.Deployment) bool {
	return d.Status.AvailableReplicas > 0
}
