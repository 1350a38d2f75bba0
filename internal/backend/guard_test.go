package backend_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

var (
	settingGVR = schema.GroupVersionResource{Group: "longhorn.io", Version: "v1beta2", Resource: "settings"}
	volumeGVR  = schema.GroupVersionResource{Group: "longhorn.io", Version: "v1beta2", Resource: "volumes"}
)

// guardChartsDir holds this package's own fixture charts (testdata/charts/README.md).
func guardChartsDir() string {
	return filepath.Join(acctest.RepoRoot(), "internal", "backend", "testdata", "charts")
}

// guard is a test of the destroy path on the guard fixture chart: its repository, its class
// name (unique to the run), a dynamic client for Longhorn's objects.
type guard struct {
	*fixture
	repo  string
	class string
	dyn   dynamic.Interface
	// api is where the fixture's hook Jobs reach the API server (acctest.StartAPIProxy).
	api string
	// defaultClass is the backend's default_class (false unless a test is about it: other
	// tests' claims without a class rely on the cluster's default).
	defaultClass bool
}

func newGuard(t *testing.T) *guard {
	t.Helper()
	// Longhorn's CRDs (and, in the shared fixtures, its class) are cluster-wide: one Longhorn
	// test at a time. Taken first, so that it is released last.
	acctest.LockCluster(t, acctest.Kube(t), acctest.LockLonghorn)
	rc, err := clientcmd.BuildConfigFromFlags("", acctest.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	// The fixture's CRDs are in its templates, as in the real chart: they go with the release.
	acctest.SweepOldLonghornCRDs(t, rc)
	g := &guard{dyn: dyn, class: acctest.RandomName("acc-lh")}
	g.fixture = newFixture(t)
	g.repo = acctest.StartChartRepo(t, guardChartsDir())
	g.api = acctest.StartAPIProxy(t)
	return g
}

// longhorn renders the backend from the guard fixture; sets are extra set entries, extra goes at
// the resource's top level. The fixture's pre-upgrade hook fails unless upgrades is true.
func (g *guard) longhorn(upgrades bool, sets, extra string) string {
	return acctest.ProviderConfig() + fmt.Sprintf(`
resource "clusterstorage_storage_backend" "test" {
  type       = "longhorn"
  repository = %q
  version    = "1.8.1"
  namespace  = %q
  longhorn = {
    default_replica_count = 1
    default_class         = %t
  }
  set = [
    { name = "fixture.className", value = %q },
    { name = "fixture.failPreUpgrade", value = "%t" },
    { name = "fixture.apiServer", value = %q },
%s
  ]
%s
}
`, g.repo, g.ns, g.defaultClass, g.class, !upgrades, g.api, sets, extra)
}

// userClass makes a StorageClass of Longhorn's driver, as a user does for e.g. a single-replica
// class, removed at the end of the test.
func (g *guard) userClass(name string) {
	g.t.Helper()
	retain := corev1.PersistentVolumeReclaimRetain
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: "driver.longhorn.io",
		ReclaimPolicy: &retain, Parameters: map[string]string{"numberOfReplicas": "1"}}
	if _, err := g.client.StorageV1().StorageClasses().Create(context.Background(), sc, metav1.CreateOptions{}); err != nil {
		g.t.Fatal(err)
	}
	g.t.Cleanup(func() {
		if err := g.client.StorageV1().StorageClasses().Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			g.t.Logf("cleanup: deleting StorageClass %s: %v", name, err)
		}
	})
}

// boundVolume makes a PersistentVolume of Longhorn's driver on class and a claim bound to it,
// as a Longhorn volume made through that class looks; the PV is removed at the end of the test.
func (g *guard) boundVolume(pv, claim, class string) {
	g.t.Helper()
	g.boundCSIVolume(pv, claim, class, "driver.longhorn.io")
}

// boundCSIVolume makes a PersistentVolume of a CSI driver on class and a claim of the test's
// namespace bound to it, as a volume that driver provisioned looks (nothing serves it: the guards
// only read it); the PV is removed at the end of the test.
func (f *fixture) boundCSIVolume(pv, claim, class, driver string) {
	f.t.Helper()
	ctx := context.Background()
	obj := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pv},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: k8sresource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              class,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: pv}},
		},
	}
	if _, err := f.client.CoreV1().PersistentVolumes().Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() {
		if err := f.client.CoreV1().PersistentVolumes().Delete(context.Background(), pv, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			f.t.Logf("cleanup: deleting PersistentVolume %s: %v", pv, err)
		}
	})
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: f.ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: &class,
			VolumeName:       pv,
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: k8sresource.MustParse("1Gi")}},
		},
	}
	if _, err := f.client.CoreV1().PersistentVolumeClaims(f.ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.waitPV(pv, corev1.VolumeBound)
}

func (f *fixture) waitPV(name string, phase corev1.PersistentVolumePhase) {
	f.t.Helper()
	err := kube.Poll(context.Background(), 200*time.Millisecond, time.Minute, "PersistentVolume "+name+" to be "+string(phase), func(ctx context.Context) (bool, string, error) {
		pv, err := f.client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return kube.KeepPolling(err)
		}
		return pv.Status.Phase == phase, string(pv.Status.Phase), nil
	})
	if err != nil {
		f.t.Fatal(err)
	}
}

// checkFlagUnset fails unless deleting-confirmation-flag is still "false" and the release is
// still at revision 1 (nothing upgraded it): what a refused destroy must leave.
func (g *guard) checkFlagUnset() {
	g.t.Helper()
	s, err := g.dyn.Resource(settingGVR).Namespace(g.ns).Get(context.Background(), "deleting-confirmation-flag", metav1.GetOptions{})
	if err != nil {
		g.t.Fatal(err)
	}
	if v, _, _ := unstructured.NestedString(s.Object, "value"); v != "false" {
		g.t.Fatalf("deleting-confirmation-flag is %q after a refused destroy, want \"false\"", v)
	}
	st, err := g.helm.Get("longhorn", g.ns)
	if err != nil || st.Revision != 1 || st.Status != "deployed" {
		g.t.Fatalf("after a refused destroy the release is %+v (%v), want revision 1 deployed", st, err)
	}
}

func (g *guard) deleteClaim(name string) {
	g.t.Helper()
	if err := g.client.CoreV1().PersistentVolumeClaims(g.ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		g.t.Fatal(err)
	}
}

// TestAccStorageBackend_guardByDriver: destroy of Longhorn is refused while a volume of its
// driver exists on a class the user made (bound, then Released under Retain) and while a Longhorn
// volume without a PersistentVolume exists; each refusal names the volume, its claim and class,
// and leaves deleting-confirmation-flag false. Once nothing is left, destroy goes through the
// chart's pre-delete hook, which reads the Setting object the provider patched; the fixture's
// failing pre-upgrade hook proves no Helm upgrade was involved.
func TestAccStorageBackend_guardByDriver(t *testing.T) {
	acctest.RunsUnder(t, acctest.FirstCLIOnly)
	g := newGuard(t)
	userClass := acctest.RandomName("acc-lh-single")
	pv := acctest.RandomName("acc-lh-pv")
	lhVolume := acctest.RandomName("acc-lh-vol")
	config := g.longhorn(false, "", "")

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy:             g.checkReleaseGone("longhorn"),
		Steps: []resource.TestStep{
			{
				Config: config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("status"), knownvalue.StringExact("deployed")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("storage_classes"), knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact(g.class)})),
				},
			},
			{
				PreConfig: func() {
					g.userClass(userClass)
					g.boundVolume(pv, "data", userClass)
				},
				Config:  config,
				Destroy: true,
				ExpectError: acctest.ErrorWords(fmt.Sprintf("PersistentVolume %s (driver.longhorn.io, Bound, reclaim Retain): claim %s/data, class %s",
					pv, g.ns, userClass)),
			},
			{
				PreConfig: func() {
					g.checkFlagUnset()
					g.deleteClaim("data")
					g.waitPV(pv, corev1.VolumeReleased)
				},
				Config:  config,
				Destroy: true,
				ExpectError: acctest.ErrorWords(fmt.Sprintf("PersistentVolume %s (driver.longhorn.io, Released, reclaim Retain): claim %s/data (deleted), class %s",
					pv, g.ns, userClass)),
			},
			{
				PreConfig: func() {
					g.checkFlagUnset()
					if err := g.client.CoreV1().PersistentVolumes().Delete(context.Background(), pv, metav1.DeleteOptions{}); err != nil {
						t.Fatal(err)
					}
					vol := &unstructured.Unstructured{Object: map[string]any{
						"apiVersion": "longhorn.io/v1beta2", "kind": "Volume",
						"metadata": map[string]any{"name": lhVolume, "namespace": g.ns},
						"spec":     map[string]any{"numberOfReplicas": int64(1), "size": "1073741824"},
						"status":   map[string]any{"state": "detached"},
					}}
					if _, err := g.dyn.Resource(volumeGVR).Namespace(g.ns).Create(context.Background(), vol, metav1.CreateOptions{}); err != nil {
						t.Fatal(err)
					}
				},
				Config:      config,
				Destroy:     true,
				ExpectError: acctest.ErrorWords(fmt.Sprintf("Longhorn volume %s/%s (driver.longhorn.io, detached): no claim, no class", g.ns, lhVolume)),
			},
			{
				PreConfig: func() {
					g.checkFlagUnset()
					if err := g.dyn.Resource(volumeGVR).Namespace(g.ns).Delete(context.Background(), lhVolume, metav1.DeleteOptions{}); err != nil {
						t.Fatal(err)
					}
				},
				// Still installed; the test's final destroy must now succeed.
				Config:   config,
				PlanOnly: true,
			},
		},
	})
}

// TestAccStorageBackend_guardInternalClaims: a claim of the release's own StatefulSet (as
// Mayastor's etcd has) on a class of the backend's driver does not block destroy; a user's claim
// on the same class does.
func TestAccStorageBackend_guardInternalClaims(t *testing.T) {
	acctest.RunsUnder(t, acctest.FirstCLIOnly)
	g := newGuard(t)
	userClass := acctest.RandomName("acc-lh-internal")
	internalClaim := "data-longhorn-fixture-internal-0"
	// Nothing provisions the class, so the StatefulSet's pod never starts: no waiting.
	config := g.longhorn(false, fmt.Sprintf("    { name = \"fixture.internalClaimClass\", value = %q },", userClass), "  wait = false")
	// The release's claim outlives it (as StatefulSet claims do); it waits for a Longhorn volume,
	// so the next Longhorn test's guard would count it: gone before the test ends.
	t.Cleanup(func() {
		ctx := context.Background()
		claims := g.client.CoreV1().PersistentVolumeClaims(g.ns)
		if err := claims.Delete(ctx, internalClaim, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Logf("cleanup: deleting claim %s: %v", internalClaim, err)
			return
		}
		err := kube.Poll(ctx, 200*time.Millisecond, time.Minute, "claim "+internalClaim+" to be gone", func(ctx context.Context) (bool, string, error) {
			_, err := claims.Get(ctx, internalClaim, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, "", nil
			}
			if err != nil {
				return kube.KeepPolling(err)
			}
			return false, "still there", nil
		})
		if err != nil {
			t.Logf("cleanup: %v", err)
		}
	})

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy: func(s *terraform.State) error {
			if err := g.checkReleaseGone("longhorn")(s); err != nil {
				return err
			}
			// The release's claim stays (StatefulSet claims outlive it), the user's is gone.
			_, err := g.client.CoreV1().PersistentVolumeClaims(g.ns).Get(context.Background(), internalClaim, metav1.GetOptions{})
			return err
		},
		Steps: []resource.TestStep{
			{
				PreConfig: func() { g.userClass(userClass) },
				Config:    config,
				Check: func(*terraform.State) error {
					return kube.Poll(context.Background(), 200*time.Millisecond, time.Minute, "claim "+internalClaim, func(ctx context.Context) (bool, string, error) {
						_, err := g.client.CoreV1().PersistentVolumeClaims(g.ns).Get(ctx, internalClaim, metav1.GetOptions{})
						if err != nil {
							return kube.KeepPolling(err)
						}
						return true, "", nil
					})
				},
			},
			{
				PreConfig:   func() { g.createClaim("mine", userClass) },
				Config:      config,
				Destroy:     true,
				ExpectError: acctest.ErrorWords(fmt.Sprintf("PersistentVolumeClaim %s/mine (driver.longhorn.io, Pending, no volume yet): claim %s/mine, class %s", g.ns, g.ns, userClass)),
			},
			{
				PreConfig: func() { g.deleteClaim("mine") },
				Config:    config,
				PlanOnly:  true,
			},
		},
	})
}
