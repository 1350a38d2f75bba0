package benchmark

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/testenv"
)

// This file tests the pod runner itself against the test cluster, where the Terraform CLI cannot
// reach: cancellation (Ctrl-C of terraform cancels the read's context). It cannot use acctest
// (which imports the provider, and so this package), so it finds the cluster the same way:
// CLUSTERSTORAGE_ACC_KUBECONFIG, or the local cluster's kubeconfig.

func testClient(t *testing.T) kubernetes.Interface {
	t.Helper()
	if os.Getenv("TF_ACC") == "" {
		t.Skip("acceptance test: runs with TF_ACC=1 (make test)")
	}
	path := os.Getenv("CLUSTERSTORAGE_ACC_KUBECONFIG")
	if path == "" {
		path = filepath.Join("..", "..", ".cluster", "kubeconfig")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatalf("no cluster for acceptance tests: %v", err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// Cancelling the context while fio runs stops the run at once; the pod (whose script removes its
// run directory on SIGTERM), the claim and the volume binding are all cleaned up before Run returns.
func TestAccStorageBenchmark_cancel(t *testing.T) {
	client := testClient(t)
	ctx := context.Background()
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil || len(nodes.Items) == 0 {
		t.Fatalf("listing nodes: %v", err)
	}
	nodeName := nodes.Items[0].Name
	if n := os.Getenv("CLUSTERSTORAGE_ACC_NODE"); n != "" {
		nodeName = n
	}
	ns := "default"
	id := newRunID()
	class := "acc-bench-cancel-" + id
	mode := storagev1.VolumeBindingWaitForFirstConsumer
	if _, err := client.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{Name: class}, Provisioner: "kubernetes.io/no-provisioner", VolumeBindingMode: &mode,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.StorageV1().StorageClasses().Delete(ctx, class, metav1.DeleteOptions{}) }) //nolint:errcheck // best effort
	dir := t.TempDir()
	pvName := class
	if _, err := client.CoreV1().PersistentVolumes().Create(ctx, testenv.LocalVolume(pvName, class, dir, nodeName), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.CoreV1().PersistentVolumes().Delete(ctx, pvName, metav1.DeleteOptions{}) }) //nolint:errcheck // best effort

	image, policy := "localhost/clusterstorage/fio:3.33", "Never"
	if img := os.Getenv("CLUSTERSTORAGE_ACC_FIO_IMAGE"); img != "" {
		image, policy = img, ""
	}
	r := podRun{
		Client:     client,
		Target:     Target{Kind: TargetStorageClass, Name: class, Namespace: ns, VolumeSize: k8sresource.MustParse("1Gi")},
		Spec:       testSpec(t, 5*time.Minute),
		Image:      image,
		PullPolicy: policy,
		RunID:      id,
		Log:        func(msg string, fields map[string]any) { t.Logf("%s %v", msg, fields) },
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Cancel once fio runs: its run directory has appeared in the volume.
	go func() {
		_ = kube.Poll(runCtx, 100*time.Millisecond, 3*time.Minute, "fio to start", func(context.Context) (bool, string, error) { //nolint:errcheck // the run reports
			m, _ := filepath.Glob(filepath.Join(dir, runDirPrefix+"*", "*"))
			return len(m) > 0, "", nil
		})
		cancel()
	}()
	start := time.Now()
	_, runErr, cleanupErr := r.Run(runCtx)
	took := time.Since(start)
	if runErr == nil || !strings.Contains(runErr.Error(), "cancelled") {
		t.Errorf("run error = %v, want a cancellation", runErr)
	}
	if cleanupErr != nil {
		t.Errorf("cleanup: %v", cleanupErr)
	}
	if took > 90*time.Second {
		t.Errorf("Run took %s after a 5 minute job was cancelled", took)
	}
	t.Logf("cancelled run returned after %s", took)

	sel := metav1.ListOptions{LabelSelector: LabelRun + "=" + id}
	if pods, err := client.CoreV1().Pods(ns).List(ctx, sel); err != nil || len(pods.Items) > 0 {
		t.Errorf("pods left: %v %v", pods, err)
	}
	if pvcs, err := client.CoreV1().PersistentVolumeClaims(ns).List(ctx, sel); err != nil || len(pvcs.Items) > 0 {
		t.Errorf("claims left: %v %v", pvcs, err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, runDirPrefix+"*")); len(m) > 0 {
		t.Errorf("run directory left in the volume: %v", m)
	}
	pv, err := client.CoreV1().PersistentVolumes().Get(ctx, pvName, metav1.GetOptions{})
	if err != nil || pv.Spec.ClaimRef != nil {
		t.Errorf("volume not released: %v %+v", err, pv.Spec.ClaimRef)
	}
}
