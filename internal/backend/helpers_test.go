package backend_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"helm.sh/helm/v4/pkg/action"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/helm"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

// providerOwner is the release label value the provider puts on the releases it installs
// (helm.OwnerLabel); a client with it acts as the provider did in an earlier, interrupted apply.
const providerOwner = "terraform-provider-clusterstorage"

// volatileFootprint is the footprint figure an import cannot reproduce: the working set the
// metrics API reports changes with every scrape (an import read one scrape after the apply's).
const volatileFootprint = "footprint.memory_usage_bytes"

// fixture is one test's cluster, namespace, Helm clients (to act outside Terraform and check
// what the provider did: helm as a person would, owned as the provider would) and chart
// repository serving the fixture charts.
type fixture struct {
	t      *testing.T
	client kubernetes.Interface
	rc     *rest.Config
	helm   *helm.Client
	owned  *helm.Client
	ns     string
	repo   string
	// locks the test holds; labelled: nodes it labelled for Mayastor.
	locks    []string
	labelled []string
}

// newFixture prepares a test: its namespace (and Helm release storage), a chart repository,
// and, first, the cluster locks the test needs (acctest.LockLonghorn for a Longhorn install,
// acctest.LockMayastorNode to label the node for Mayastor, acctest.LockSnapshotCRDs to leave the
// VolumeSnapshot CRDs on). At the end it removes everything the test made, also after a failure.
func newFixture(t *testing.T, locks ...string) *fixture {
	t.Helper()
	client := acctest.Kube(t)
	for _, l := range locks {
		acctest.LockCluster(t, client, l)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", acctest.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	hc, err := helm.New(rc, helm.Options{CacheDir: t.TempDir(), Log: func(format string, args ...any) { t.Logf("helm: "+format, args...) }})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(locks, acctest.LockLonghorn) {
		acctest.SweepOldLonghornCRDs(t, rc)
	}
	owned, err := helm.New(rc, helm.Options{CacheDir: t.TempDir(), Owner: providerOwner})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, client: client, rc: rc, helm: hc, owned: owned, ns: acctest.RandomName("acc-backend"),
		repo: acctest.StartChartRepo(t, acctest.ChartsDir()), locks: locks}
	t.Cleanup(f.cleanup)
	return f
}

// cleanup uninstalls the test's releases (without hooks), deletes its namespace, then what the
// releases leave behind by design: volumes of the namespace's claims, the VolumeSnapshot CRDs the
// test's release made (kept on uninstall), Longhorn's class (a hook object), node labels the
// test added.
func (f *fixture) cleanup() {
	t := f.t
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, name := range []string{"openebs", "longhorn"} {
		if err := f.helm.Uninstall(ctx, name, f.ns, helm.UninstallOptions{Wait: true, Timeout: time.Minute, DisableHooks: true}); err != nil {
			t.Logf("cleanup: %v", err)
		}
	}
	if err := f.client.CoreV1().Namespaces().Delete(ctx, f.ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Logf("cleanup: deleting namespace %s: %v", f.ns, err)
	}
	err := kube.Poll(ctx, 500*time.Millisecond, 2*time.Minute, "namespace "+f.ns+" to go", func(ctx context.Context) (bool, string, error) {
		_, err := f.client.CoreV1().Namespaces().Get(ctx, f.ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), "still terminating", nil
	})
	if err != nil {
		t.Logf("cleanup: %v", err)
	}
	pvs, err := f.client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err == nil {
		for _, pv := range pvs.Items {
			if pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.Namespace == f.ns {
				if err := f.client.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
					t.Logf("cleanup: deleting PersistentVolume %s: %v", pv.Name, err)
				}
			}
		}
	}
	if dyn, err := dynamic.NewForConfig(f.rc); err == nil {
		crds := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
		for _, name := range []string{"volumesnapshotclasses.snapshot.storage.k8s.io", "volumesnapshotcontents.snapshot.storage.k8s.io", "volumesnapshots.snapshot.storage.k8s.io"} {
			crd, err := crds.Get(ctx, name, metav1.GetOptions{})
			if err == nil && crd.GetAnnotations()["meta.helm.sh/release-namespace"] == f.ns {
				if err := crds.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
					t.Logf("cleanup: deleting CRD %s: %v", name, err)
				}
			}
		}
	}
	if slices.Contains(f.locks, acctest.LockLonghorn) {
		// The fixture's class `longhorn` is a hook object: no uninstall removes it.
		if err := f.client.StorageV1().StorageClasses().Delete(ctx, "longhorn", metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Logf("cleanup: deleting StorageClass longhorn: %v", err)
		}
	}
	for _, n := range f.labelled {
		patch := []byte(`{"metadata":{"labels":{"openebs.io/engine":null}}}`)
		if _, err := f.client.CoreV1().Nodes().Patch(ctx, n, k8stypes.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Logf("cleanup: unlabelling node %s: %v", n, err)
		}
	}
}

// labelMayastorNodes labels every node openebs.io/engine=mayastor (the test must hold
// acctest.LockMayastorNode); cleanup takes off the labels it added.
func (f *fixture) labelMayastorNodes() {
	f.t.Helper()
	if !slices.Contains(f.locks, acctest.LockMayastorNode) {
		f.t.Fatal("labelMayastorNodes needs newFixture(t, acctest.LockMayastorNode)")
	}
	nodes, err := f.client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	for _, n := range nodes.Items {
		if n.Labels["openebs.io/engine"] == "mayastor" {
			continue
		}
		patch := []byte(`{"metadata":{"labels":{"openebs.io/engine":"mayastor"}}}`)
		if _, err := f.client.CoreV1().Nodes().Patch(context.Background(), n.Name, k8stypes.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			f.t.Fatal(err)
		}
		f.labelled = append(f.labelled, n.Name)
	}
}

// chart returns a chart of the fixture repository, for actions taken outside Terraform.
func (f *fixture) chart(name, version string) *helm.Release {
	f.t.Helper()
	ch, err := f.helm.LocateChart(context.Background(), helm.Source{Repository: f.repo, Chart: name, Version: version})
	if err != nil {
		f.t.Fatal(err)
	}
	return &helm.Release{Name: name, Namespace: f.ns, Chart: ch}
}

// actionConfig gives direct access to the release storage (to fake an interrupted apply).
func (f *fixture) actionConfig() *action.Configuration {
	f.t.Helper()
	cfg := action.NewConfiguration()
	if err := cfg.Init(helm.NewRESTClientGetter(f.rc, f.ns), f.ns, "secret"); err != nil {
		f.t.Fatal(err)
	}
	return cfg
}

// checkReleaseGone is a CheckDestroy: the release and its workloads are gone.
func (f *fixture) checkReleaseGone(name string) func(*terraform.State) error {
	return func(*terraform.State) error {
		if st, err := f.helm.Get(name, f.ns); !errors.Is(err, helm.ErrNotFound) {
			return fmt.Errorf("release %s/%s still exists after destroy: %+v %v", f.ns, name, st, err)
		}
		return nil
	}
}

// release returns the live openebs release.
func (f *fixture) release() (*helm.Status, error) {
	return f.helm.Get("openebs", f.ns)
}

// checkFootprint compares the state's footprint with the requests of the running pods of the
// namespace, summed independently here.
func (f *fixture) checkFootprint() func(*terraform.State) error {
	return func(s *terraform.State) error {
		rs, ok := s.RootModule().Resources[addr]
		if !ok {
			return fmt.Errorf("%s not in state", addr)
		}
		pods, err := f.client.CoreV1().Pods(f.ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		var n, containers int
		var cpu, mem, lim int64
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodPending || p.DeletionTimestamp != nil {
				continue
			}
			n++
			for _, c := range p.Spec.Containers {
				containers++
				cpu += c.Resources.Requests.Cpu().MilliValue()
				mem += c.Resources.Requests.Memory().Value()
				lim += c.Resources.Limits.Memory().Value()
			}
		}
		want := map[string]string{
			"footprint.pods":                    fmt.Sprint(n),
			"footprint.containers":              fmt.Sprint(containers),
			"footprint.cpu_requests_millicores": fmt.Sprint(cpu),
			"footprint.memory_requests_bytes":   fmt.Sprint(mem),
			"footprint.memory_limits_bytes":     fmt.Sprint(lim),
		}
		for k, v := range want {
			if got := rs.Primary.Attributes[k]; got != v {
				return fmt.Errorf("%s = %s, but the pods of namespace %s sum to %s", k, got, f.ns, v)
			}
		}
		if n == 0 {
			return fmt.Errorf("no running pods in %s", f.ns)
		}
		return nil
	}
}

// nodeCount is the number of the cluster's nodes (a DaemonSet's pods, with nothing in the way).
func (f *fixture) nodeCount() int64 {
	f.t.Helper()
	nodes, err := f.client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return int64(len(nodes.Items))
}
