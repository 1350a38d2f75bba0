package benchtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/benchmark"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/testenv"
)

// localFioImage is the fio image of the project's local cluster (tools/kube/cluster.sh).
const localFioImage = "localhost/clusterstorage/fio:3.33"

// FioImageEnv names the image the tests' fio pods use on a cluster of the user's choosing.
const FioImageEnv = "CLUSTERSTORAGE_ACC_FIO_IMAGE"

// Env is one test's slice of the cluster: its own namespace, and the node volumes live on.
type Env struct {
	// T is the test the fixtures are for: they fail it, skip it and clean up when it ends.
	T *testing.T
	// Client talks to the test cluster (acctest.Kube).
	Client kubernetes.Interface
	// Node is the node local volumes live on (acctest.Node).
	Node string
	// NS is the test's own namespace.
	NS string
}

// Setup gives the test t a namespace of its own (acctest.Namespace, removed when t ends) on the
// test cluster, once pods can run in it, and the node its volumes live on (acctest.Node).
func Setup(t *testing.T) *Env {
	t.Helper()
	client := acctest.Kube(t)
	e := &Env{T: t, Client: client, Node: acctest.Node(t), NS: acctest.Namespace(t, client, "acc-bench")}
	ctx := context.Background()
	// Pods are refused until the namespace's default ServiceAccount exists.
	if err := kube.Poll(ctx, 100*time.Millisecond, time.Minute, "the default ServiceAccount", func(ctx context.Context) (bool, string, error) {
		_, err := client.CoreV1().ServiceAccounts(e.NS).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, "", nil
	}); err != nil {
		t.Fatal(err)
	}
	return e
}

// PodAttributes are the data source's pod settings for the test cluster: the local cluster needs
// its locally built image, never pulled. host_network stays at its default (false): the local
// cluster's pod policy (tools/kube/testdata/pod-network-policy.yaml) stands in for a pod network.
func PodAttributes() string {
	if acctest.LocalCluster() {
		return fmt.Sprintf("  image             = %q\n  image_pull_policy = \"Never\"\n", localFioImage)
	}
	image := os.Getenv(FioImageEnv)
	if image == "" {
		image = benchmark.DefaultImage
	}
	return fmt.Sprintf("  image = %q\n", image)
}

// Class makes a kubernetes.io/no-provisioner class with WaitForFirstConsumer binding, deleted
// when the test ends, and returns its name.
func (e *Env) Class() string {
	name := acctest.RandomName("acc-bench-sc")
	mode := storagev1.VolumeBindingWaitForFirstConsumer
	_, err := e.Client.StorageV1().StorageClasses().Create(context.Background(), &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: name},
		Provisioner:       "kubernetes.io/no-provisioner",
		VolumeBindingMode: &mode,
	}, metav1.CreateOptions{})
	if err != nil {
		e.T.Fatalf("creating storage class: %v", err)
	}
	e.T.Cleanup(func() {
		_ = e.Client.StorageV1().StorageClasses().Delete(context.Background(), name, metav1.DeleteOptions{}) //nolint:errcheck // best effort
	})
	return name
}

// LocalPV makes a local volume of class on a new directory on the node (this machine), and
// returns the volume's name and directory. dir, when set, is used instead of a new directory. The
// volume is deleted when the test ends.
func (e *Env) LocalPV(class, dir string) (string, string) {
	if dir == "" {
		dir = e.T.TempDir()
	}
	name := acctest.RandomName("acc-bench-pv")
	_, err := e.Client.CoreV1().PersistentVolumes().Create(context.Background(), testenv.LocalVolume(name, class, dir, e.Node), metav1.CreateOptions{})
	if err != nil {
		e.T.Fatalf("creating local volume: %v", err)
	}
	e.T.Cleanup(func() {
		_ = e.Client.CoreV1().PersistentVolumes().Delete(context.Background(), name, metav1.DeleteOptions{}) //nolint:errcheck // best effort
	})
	return name, dir
}

// Claim makes a claim in the test's namespace bound to the volume pv (of class), and returns its
// name.
func (e *Env) Claim(class, pv string) string {
	name := acctest.RandomName("acc-bench-pvc")
	_, err := e.Client.CoreV1().PersistentVolumeClaims(e.NS).Create(context.Background(), &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: &class,
			VolumeName:       pv,
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: k8sresource.MustParse("1Gi")}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		e.T.Fatalf("creating claim: %v", err)
	}
	return name
}

// NoLeftovers checks that no pod or claim of any benchmark run is left in the namespace, and no
// cache ConfigMap unless caching was asked for.
func (e *Env) NoLeftovers(allowCache bool) error {
	ctx := context.Background()
	sel := metav1.ListOptions{LabelSelector: benchmark.LabelRun}
	pods, err := e.Client.CoreV1().Pods(e.NS).List(ctx, sel)
	if err != nil {
		return err
	}
	pvcs, err := e.Client.CoreV1().PersistentVolumeClaims(e.NS).List(ctx, sel)
	if err != nil {
		return err
	}
	var left []string
	for _, p := range pods.Items {
		left = append(left, "pod "+p.Name)
	}
	for _, c := range pvcs.Items {
		left = append(left, "claim "+c.Name)
	}
	if !allowCache {
		cms, err := e.Client.CoreV1().ConfigMaps(e.NS).List(ctx, metav1.ListOptions{LabelSelector: benchmark.LabelCache})
		if err != nil {
			return err
		}
		for _, c := range cms.Items {
			left = append(left, "configmap "+c.Name)
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("left behind in %s: %s", e.NS, strings.Join(left, ", "))
	}
	return nil
}

// NoRunDirs checks that dir holds no run directory of the benchmark.
func NoRunDirs(dir string) error {
	matches, err := filepath.Glob(filepath.Join(dir, ".clusterstorage-benchmark-*"))
	if err != nil {
		return err
	}
	if len(matches) > 0 {
		return fmt.Errorf("run directories left in %s: %v", dir, matches)
	}
	return nil
}

// VolumeAvailable checks that a static volume is Available again after a run.
func (e *Env) VolumeAvailable(pv string) error {
	return kube.Poll(context.Background(), 100*time.Millisecond, 30*time.Second, "volume "+pv+" to be Available", func(ctx context.Context) (bool, string, error) {
		v, err := e.Client.CoreV1().PersistentVolumes().Get(ctx, pv, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		return v.Status.Phase == corev1.VolumeAvailable, "phase " + string(v.Status.Phase), nil
	})
}
