package benchmark_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/benchmark"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

const addr = "data.clusterstorage_storage_benchmark.test"

// localFioImage is the fio image of the project's local cluster (tools/kube/cluster.sh).
const localFioImage = "localhost/clusterstorage/fio:3.33"

// FioImageEnv names the image the tests' fio pods use on a cluster of the user's choosing.
const FioImageEnv = "CLUSTERSTORAGE_ACC_FIO_IMAGE"

// env is one test's slice of the cluster: its own namespace, and the node volumes live on.
type env struct {
	t      *testing.T
	client kubernetes.Interface
	node   string
	ns     string
}

func setup(t *testing.T) *env {
	t.Helper()
	client := acctest.Kube(t)
	e := &env{t: t, client: client, node: acctest.Node(t), ns: acctest.Namespace(t, client, "acc-bench")}
	ctx := context.Background()
	// Pods are refused until the namespace's default ServiceAccount exists.
	if err := kube.Poll(ctx, 100*time.Millisecond, time.Minute, "the default ServiceAccount", func(ctx context.Context) (bool, string, error) {
		_, err := client.CoreV1().ServiceAccounts(e.ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, "", nil
	}); err != nil {
		t.Fatal(err)
	}
	return e
}

// podAttributes are the data source's pod settings for the test cluster: the local cluster needs
// its locally built image, never pulled, and the host network.
func podAttributes() string {
	if acctest.LocalCluster() {
		return fmt.Sprintf("  image             = %q\n  image_pull_policy = \"Never\"\n  host_network      = true\n", localFioImage)
	}
	image := os.Getenv(FioImageEnv)
	if image == "" {
		image = benchmark.DefaultImage
	}
	return fmt.Sprintf("  image = %q\n", image)
}

// class makes a kubernetes.io/no-provisioner class with WaitForFirstConsumer binding.
func (e *env) class() string {
	name := acctest.RandomName("acc-bench-sc")
	mode := storagev1.VolumeBindingWaitForFirstConsumer
	_, err := e.client.StorageV1().StorageClasses().Create(context.Background(), &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: name},
		Provisioner:       "kubernetes.io/no-provisioner",
		VolumeBindingMode: &mode,
	}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("creating storage class: %v", err)
	}
	e.t.Cleanup(func() {
		_ = e.client.StorageV1().StorageClasses().Delete(context.Background(), name, metav1.DeleteOptions{}) //nolint:errcheck // best effort
	})
	return name
}

// localPV makes a local volume of class on a new directory on the node (this machine), and
// returns the volume's name and directory. dir, when set, is used instead of a new directory.
func (e *env) localPV(class, dir string) (string, string) {
	if dir == "" {
		dir = e.t.TempDir()
	}
	name := acctest.RandomName("acc-bench-pv")
	_, err := e.client.CoreV1().PersistentVolumes().Create(context.Background(), benchmark.LocalVolume(name, class, dir, e.node), metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("creating local volume: %v", err)
	}
	e.t.Cleanup(func() {
		_ = e.client.CoreV1().PersistentVolumes().Delete(context.Background(), name, metav1.DeleteOptions{}) //nolint:errcheck // best effort
	})
	return name, dir
}

// claim makes a claim bound to the volume pv (of class).
func (e *env) claim(class, pv string) string {
	name := acctest.RandomName("acc-bench-pvc")
	_, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Create(context.Background(), &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: &class,
			VolumeName:       pv,
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: k8sresource.MustParse("1Gi")}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("creating claim: %v", err)
	}
	return name
}

// noLeftovers checks that no pod or claim of any benchmark run is left in the namespace, and no
// cache ConfigMap unless caching was asked for.
func (e *env) noLeftovers(allowCache bool) error {
	ctx := context.Background()
	sel := metav1.ListOptions{LabelSelector: benchmark.LabelRun}
	pods, err := e.client.CoreV1().Pods(e.ns).List(ctx, sel)
	if err != nil {
		return err
	}
	pvcs, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).List(ctx, sel)
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
		cms, err := e.client.CoreV1().ConfigMaps(e.ns).List(ctx, metav1.ListOptions{LabelSelector: benchmark.LabelCache})
		if err != nil {
			return err
		}
		for _, c := range cms.Items {
			left = append(left, "configmap "+c.Name)
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("left behind in %s: %s", e.ns, strings.Join(left, ", "))
	}
	return nil
}

// noRunDirs checks that dir holds no run directory of the benchmark.
func noRunDirs(dir string) error {
	matches, err := filepath.Glob(filepath.Join(dir, ".clusterstorage-benchmark-*"))
	if err != nil {
		return err
	}
	if len(matches) > 0 {
		return fmt.Errorf("run directories left in %s: %v", dir, matches)
	}
	return nil
}

// volumeAvailable checks that a static volume is Available again after a run.
func (e *env) volumeAvailable(pv string) error {
	return kube.Poll(context.Background(), 100*time.Millisecond, 30*time.Second, "volume "+pv+" to be Available", func(ctx context.Context) (bool, string, error) {
		v, err := e.client.CoreV1().PersistentVolumes().Get(ctx, pv, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		return v.Status.Phase == corev1.VolumeAvailable, "phase " + string(v.Status.Phase), nil
	})
}

// plausible is a state check on the data source's numbers: I/O in the directions the job does,
// none in the others, and ordered latency percentiles.
func plausible(reads, writes bool) statecheck.StateCheck {
	return acctest.CheckValues(addr, func(values map[string]any) error { return plausibleIn(values, reads, writes) })
}

// plausibleIn is plausible on the attribute values of one result (a comparison checks each of
// its results with it).
func plausibleIn(values map[string]any, reads, writes bool) error {
	var errs []error
	for _, d := range []struct {
		name string
		want bool
	}{{"read", reads}, {"write", writes}} {
		obj, _ := values[d.name].(map[string]any)
		iops := acctest.Number(obj["iops"])
		if d.want != (iops > 0) {
			errs = append(errs, fmt.Errorf("%s.iops = %v, want I/O: %v", d.name, iops, d.want))
		}
		if !d.want {
			continue
		}
		if bw := acctest.Number(obj["bandwidth_bytes_per_second"]); bw <= 0 {
			errs = append(errs, fmt.Errorf("%s.bandwidth_bytes_per_second = %v", d.name, bw))
		}
		lat, _ := obj["latency_us"].(map[string]any)
		prev := 0.0
		for _, p := range []string{"p50", "p95", "p99", "p99_9", "max"} {
			v := acctest.Number(lat[p])
			if v <= 0 || v < prev {
				errs = append(errs, fmt.Errorf("%s.latency_us: %s = %v after %v; percentiles must be positive and ordered (%v)", d.name, p, v, prev, lat))
			}
			prev = v
		}
		if mean := acctest.Number(lat["mean"]); mean <= 0 || mean > acctest.Number(lat["max"]) {
			errs = append(errs, fmt.Errorf("%s.latency_us.mean = %v, max %v", d.name, mean, acctest.Number(lat["max"])))
		}
	}
	if v, _ := values["fio_version"].(string); !strings.HasPrefix(v, "fio-3") {
		errs = append(errs, fmt.Errorf("fio_version = %q", v))
	}
	if s := acctest.Number(values["runtime_seconds"]); s <= 0 {
		errs = append(errs, fmt.Errorf("runtime_seconds = %v", s))
	}
	if at, _ := values["measured_at"].(string); at == "" {
		errs = append(errs, errors.New("measured_at is empty"))
	} else if ts, err := time.Parse(time.RFC3339, at); err != nil || time.Since(ts) > time.Hour {
		errs = append(errs, fmt.Errorf("measured_at = %q (%v)", at, err))
	}
	return errors.Join(errs...)
}
