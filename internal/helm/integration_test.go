package helm_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/action"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	release "helm.sh/helm/v4/pkg/release/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/helm"
)

// testOwner marks the releases the integration tests' client installs.
const testOwner = "helm-integration-test"

// abandoned makes r look like an operation that started an hour ago, longer than any timeout
// the tests use, so that Recover treats it as interrupted.
func abandoned(r *release.Release) {
	r.Info.LastDeployed = time.Now().Add(-time.Hour)
}

// cluster is what an integration test needs: the real cluster from
// KUBECONFIG, a Helm client on it, a fresh namespace, and the fixture charts
// served from a local chart repository.
type cluster struct {
	rc   *rest.Config
	cs   kubernetes.Interface
	c    *helm.Client
	ns   string
	repo string
	// class is the name of this test's OpenEBS hostpath class; locks are the cluster locks
	// (acctest.Lock*) the test holds.
	class string
	locks []string
}

// needCluster prepares a test on the cluster from KUBECONFIG: first the cluster locks it needs
// (acctest.LockLonghorn for a Longhorn release), then a namespace and the fixture charts. At the
// end it removes the test's releases, namespace and what they leave by design.
func needCluster(t *testing.T, locks ...string) *cluster {
	t.Helper()
	path := os.Getenv("KUBECONFIG")
	if path == "" {
		msg := "KUBECONFIG is not set: these tests install charts into a real cluster " +
			"(start one with tools/kube/cluster.sh up and export KUBECONFIG=.cluster/kubeconfig)"
		if os.Getenv("CI") != "" {
			t.Fatal(msg) // CI starts the cluster: a missing one is a broken test bed, not a skip
		}
		t.Skip(msg)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatalf("KUBECONFIG=%s: %v", path, err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	c, err := helm.New(rc, helm.Options{CacheDir: t.TempDir(), Owner: testOwner, Log: func(format string, args ...any) {
		t.Logf("helm: "+format, args...)
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range locks {
		acctest.LockCluster(t, cs, l)
	}
	if slices.Contains(locks, acctest.LockLonghorn) {
		acctest.SweepOldLonghornCRDs(t, rc)
	}
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	ns := "it-helm-" + hex.EncodeToString(b)
	k := &cluster{rc: rc, cs: cs, c: c, ns: ns, repo: acctest.StartChartRepo(t, acctest.ChartsDir()), class: "it-hostpath-" + hex.EncodeToString(b), locks: locks}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		// The test's volumes first, while their provisioners still run to delete them: a claim
		// left by a failed test would leave a Released volume of openebs.io/local behind, which
		// every later OpenEBS destroy on the cluster would then (rightly) refuse to orphan.
		removeVolumes(ctx, t, cs, ns, k.class)
		// Releases next (they own cluster-scoped StorageClasses and RBAC),
		// then the namespace.
		for _, name := range []string{"openebs", "longhorn"} {
			if err := c.Uninstall(ctx, name, ns, helm.UninstallOptions{Wait: true, Timeout: time.Minute, DisableHooks: true}); err != nil {
				t.Logf("cleanup: %v", err)
			}
		}
		if err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Logf("cleanup: deleting namespace %s: %v", ns, err)
		}
		if slices.Contains(locks, acctest.LockLonghorn) {
			// Longhorn's class is made after the install (a hook object in the fixture): no
			// uninstall removes it.
			if err := cs.StorageV1().StorageClasses().Delete(ctx, "longhorn", metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Logf("cleanup: deleting StorageClass longhorn: %v", err)
			}
		}
	})
	return k
}

// removeVolumes deletes the claims in namespace ns and waits for the volumes of the test's classes
// (named class or class-<suffix>) to go; what is left after a minute is deleted by hand (the
// test's own, made for this run).
func removeVolumes(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, class string) {
	if err := cs.CoreV1().PersistentVolumeClaims(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Logf("cleanup: deleting the claims in %s: %v", ns, err)
	}
	ours := func() []string {
		pvs, err := cs.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Logf("cleanup: listing volumes: %v", err)
			return nil
		}
		var names []string
		for _, pv := range pvs.Items {
			if sc := pv.Spec.StorageClassName; sc == class || strings.HasPrefix(sc, class+"-") {
				names = append(names, pv.Name)
			}
		}
		return names
	}
	deadline := time.Now().Add(time.Minute)
	for left := ours(); len(left) > 0; left = ours() {
		if time.Now().After(deadline) {
			for _, name := range left {
				t.Logf("cleanup: volume %s was not deleted by its provisioner; deleting it", name)
				_ = cs.CoreV1().PersistentVolumes().Delete(ctx, name, metav1.DeleteOptions{}) //nolint:errcheck // best effort, logged above
			}
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// openebs returns OpenEBS values that keep the test's cluster-wide objects its own: its own
// hostpath class name, no VolumeSnapshot CRDs (cluster-wide, kept on uninstall), no Mayastor and
// no Loki (fixed class names); typed and yamlDoc apply on top, as for values.
func (k *cluster) openebs(t *testing.T, typed map[string]any, yamlDoc string) map[string]any {
	t.Helper()
	all := map[string]any{
		"localpv-provisioner.hostpathClass.name":   k.class,
		"openebs-crds.csi.volumeSnapshots.enabled": false,
		"engines.replicated.mayastor.enabled":      false,
		"loki.enabled":                             false,
	}
	for key, v := range typed {
		all[key] = v
	}
	return k.values(t, all, yamlDoc)
}

func (k *cluster) chart(t *testing.T, name, version string) *chart.Chart {
	t.Helper()
	ch, err := k.c.LocateChart(context.Background(), helm.Source{Repository: k.repo, Chart: name, Version: version})
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

func (k *cluster) values(t *testing.T, typed map[string]any, yamlDoc string, sets ...helm.Set) map[string]any {
	t.Helper()
	v, err := helm.MergeValues(typed, []string{yamlDoc}, sets)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// poll waits for cond with a deadline; no sleeping for a fixed time.
func poll(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := cond()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		<-tick.C
	}
}

func TestIntegrationOpenEBSInstallUpgradeUninstall(t *testing.T) {
	k := needCluster(t)
	ctx := context.Background()
	basePath := filepath.Join(t.TempDir(), "openebs-local")

	// 4.0.x: the engines' conditions are engines.*.enabled, as in later versions.
	typed := map[string]any{
		"localpv-provisioner.hostpathClass.basePath": basePath,
		"engines.local.lvm.enabled":                  false,
	}
	st, err := k.c.Install(ctx, helm.Release{
		Name: "openebs", Namespace: k.ns, CreateNamespace: true,
		Chart:  k.chart(t, "openebs", "4.0.1"),
		Values: k.openebs(t, typed, "engines:\n  local:\n    zfs:\n      enabled: false\n"),
		Wait:   true, Timeout: 3 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != "deployed" || st.Revision != 1 || st.ChartName != "openebs" || st.ChartVersion != "4.0.1" || st.AppVersion != "4.0.1" {
		t.Fatalf("after install: %+v", st)
	}

	got, err := k.c.Get("openebs", k.ns)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := got.Values["engines"].(map[string]any)["local"].(map[string]any)["lvm"].(map[string]any)["enabled"].(bool); v { //nolint:forcetypeassert // test
		t.Errorf("user-supplied values not returned: %v", got.Values)
	}
	for _, name := range []string{"openebs-lvm-localpv-node", "openebs-zfs-localpv-node", "openebs-io-engine"} {
		if _, err := k.cs.AppsV1().DaemonSets(k.ns).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("engine off, but DaemonSet %s: %v", name, err)
		}
	}
	objs, err := got.Objects()
	if err != nil {
		t.Fatal(err)
	}
	classes := helm.StorageClasses(objs)
	slices.Sort(classes)
	if !slices.Equal(classes, []string{k.class}) {
		t.Errorf("storage classes %q", classes)
	}
	sc, err := k.cs.StorageV1().StorageClasses().Get(ctx, k.class, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sc.Annotations["cas.openebs.io/config"], "value: \""+basePath+"\"") {
		t.Errorf("BasePath annotation: %q", sc.Annotations["cas.openebs.io/config"])
	}

	fp, err := k.c.ReleaseFootprint(ctx, got)
	if err != nil {
		t.Fatal(err)
	}
	// localpv-provisioner (10m, 32Mi, limit 256Mi) alone.
	if fp.Pods != 1 || fp.Containers != 1 || fp.CPURequestsMilli != 10 || fp.MemoryRequestsBytes != 32<<20 || fp.MemoryLimitsBytes != 256<<20 {
		t.Errorf("footprint %+v", *fp)
	}

	// The provisioner really provisions: a PVC of openebs-hostpath binds and
	// a pod writes into a directory under the base path. With a second OpenEBS on
	// the cluster (the demo's, say): its provisioner has the same name, and the
	// volume must still land under this class's base path, never under the other's.
	neighbourPath := filepath.Join(t.TempDir(), "neighbour")
	installNeighbour(t, k, neighbourPath)
	provisionAndWrite(t, k, basePath)
	if m, _ := filepath.Glob(filepath.Join(neighbourPath, "*")); len(m) != 0 {
		t.Errorf("the other release's provisioner made volumes of this class under its own base path: %q", m)
	}

	// Upgrade to 4.4, whose alloy is on by default.
	st, err = k.c.Upgrade(ctx, helm.Release{
		Name: "openebs", Namespace: k.ns,
		Chart: k.chart(t, "openebs", "4.4.0"),
		Values: k.openebs(t, map[string]any{
			"localpv-provisioner.hostpathClass.basePath": basePath,
			"engines.local.lvm.enabled":                  false,
			"engines.local.zfs.enabled":                  false,
		}, ""),
		Wait: true, Timeout: 3 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.Revision != 2 || st.ChartVersion != "4.4.0" || st.Status != "deployed" {
		t.Fatalf("after upgrade: %+v", st)
	}
	if _, err := k.cs.AppsV1().DaemonSets(k.ns).Get(ctx, "openebs-io-engine", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("mayastor io-engine still there after turning it off: %v", err)
	}
	if _, err := k.cs.AppsV1().DaemonSets(k.ns).Get(ctx, "openebs-alloy", metav1.GetOptions{}); err != nil {
		t.Errorf("alloy (on by default in 4.4): %v", err)
	}
	hist, err := k.c.History("openebs", k.ns)
	if err != nil || len(hist) != 2 || hist[0].Status != "superseded" {
		t.Errorf("history: %v %v", hist, err)
	}

	if err := k.c.Uninstall(ctx, "openebs", k.ns, helm.UninstallOptions{Wait: true, Timeout: 2 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	if _, err := k.c.Get("openebs", k.ns); !errors.Is(err, helm.ErrNotFound) {
		t.Fatalf("after uninstall Get = %v, want ErrNotFound", err)
	}
	if _, err := k.cs.StorageV1().StorageClasses().Get(ctx, k.class, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("storage class left behind: %v", err)
	}
	// Uninstalling what is not there is fine.
	if err := k.c.Uninstall(ctx, "openebs", k.ns, helm.UninstallOptions{}); err != nil {
		t.Errorf("second uninstall: %v", err)
	}
}

// installNeighbour installs a second OpenEBS release beside the test's, with its own class and base
// path, and uninstalls it at the end.
func installNeighbour(t *testing.T, k *cluster, basePath string) {
	t.Helper()
	const name = "openebs-neighbour"
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := k.c.Uninstall(ctx, name, k.ns, helm.UninstallOptions{Wait: true, Timeout: time.Minute, DisableHooks: true}); err != nil {
			t.Logf("cleanup: %v", err)
		}
	})
	values := k.openebs(t, map[string]any{
		"localpv-provisioner.hostpathClass.name":     k.class + "-neighbour",
		"localpv-provisioner.hostpathClass.basePath": basePath,
		"engines.local.lvm.enabled":                  false,
		"engines.local.zfs.enabled":                  false,
	}, "")
	if _, err := k.c.Install(context.Background(), helm.Release{
		Name: name, Namespace: k.ns, Chart: k.chart(t, "openebs", "4.0.1"), Values: values,
		Wait: true, Timeout: 3 * time.Minute,
	}); err != nil {
		t.Fatal(err)
	}
}

func provisionAndWrite(t *testing.T, k *cluster, basePath string) {
	t.Helper()
	ctx := context.Background()
	class := k.class
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: k.ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: &class,
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("16Mi")}},
		},
	}
	if _, err := k.cs.CoreV1().PersistentVolumeClaims(k.ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// On this machine's node, where the test looks for the volume directory (a multi-node
	// cluster could schedule it onto a machine node).
	var onThisMachine map[string]string
	if name := acctest.LocalNodeName(t, os.Getenv("KUBECONFIG")); name != "" {
		onThisMachine = map[string]string{"kubernetes.io/hostname": name}
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "writer", Namespace: k.ns},
		Spec: corev1.PodSpec{
			NodeSelector:  onThisMachine,
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "w", Image: "localhost/clusterstorage/busybox:1", ImagePullPolicy: corev1.PullNever,
				Command:      []string{"sh", "-c", "echo hello > /data/hello"},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
			}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}},
		},
	}
	poll(t, time.Minute, "the default service account", func() (bool, error) {
		_, err := k.cs.CoreV1().ServiceAccounts(k.ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if _, err := k.cs.CoreV1().Pods(k.ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, 2*time.Minute, "the writer pod on a dynamically provisioned volume", func() (bool, error) {
		p, err := k.cs.CoreV1().Pods(k.ns).Get(ctx, "writer", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if p.Status.Phase == corev1.PodFailed {
			return false, errors.New("writer pod failed")
		}
		return p.Status.Phase == corev1.PodSucceeded, nil
	})
	matches, _ := filepath.Glob(filepath.Join(basePath, "*", "hello"))
	if len(matches) != 1 {
		t.Fatalf("no volume directory with the written file under %s: %q", basePath, matches)
	}
	_ = k.cs.CoreV1().Pods(k.ns).Delete(ctx, "writer", metav1.DeleteOptions{})
	_ = k.cs.CoreV1().PersistentVolumeClaims(k.ns).Delete(ctx, "data", metav1.DeleteOptions{})
	poll(t, 2*time.Minute, "the released volume to be cleaned up", func() (bool, error) {
		m, _ := filepath.Glob(filepath.Join(basePath, "*", "hello"))
		return len(m) == 0, nil
	})
}

func TestIntegrationTimeoutRollbackAndAtomicInstall(t *testing.T) {
	k := needCluster(t)
	ctx := context.Background()

	// A failed install is removed.
	start := time.Now()
	_, err := k.c.Install(ctx, helm.Release{
		Name: "openebs", Namespace: k.ns, CreateNamespace: true,
		Chart:  k.chart(t, "openebs", "4.4.0"),
		Values: k.openebs(t, nil, "fixture:\n  neverReady: true\n"),
		Wait:   true, Timeout: 20 * time.Second,
	})
	if err == nil {
		t.Fatal("install with a never-ready workload succeeded")
	}
	t.Logf("install failed as expected after %s: %v", time.Since(start).Round(time.Second), err)
	if _, err := k.c.Get("openebs", k.ns); !errors.Is(err, helm.ErrNotFound) {
		t.Fatalf("failed atomic install left a release: %v", err)
	}
	if _, err := k.cs.StorageV1().StorageClasses().Get(ctx, k.class, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("failed install left its storage class: %v", err)
	}

}

// TestIntegrationLonghornHooks: the Longhorn fixture's hooks behave like the real chart's: its
// pre-upgrade check refuses a skipped minor, a failing upgrade is rolled back, its pre-delete
// hook refuses while deleting-confirmation-flag is false and lets the uninstall through once it
// is true, and the uninstall takes Longhorn's CRDs with it.
func TestIntegrationLonghornHooks(t *testing.T) {
	k := needCluster(t, acctest.LockLonghorn)
	ctx := context.Background()
	values := k.values(t, map[string]any{"persistence.defaultClassReplicaCount": 1, "longhornUI.replicas": 1}, "")
	if _, err := k.c.Install(ctx, helm.Release{
		Name: "longhorn", Namespace: k.ns, CreateNamespace: true,
		Chart: k.chart(t, "longhorn", "1.8.2"), Values: values, Wait: true, Timeout: 2 * time.Minute,
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := k.cs.StorageV1().StorageClasses().Get(ctx, "longhorn", metav1.GetOptions{}); err != nil {
		t.Fatalf("class longhorn after the install: %v", err)
	}

	// 1.8 -> 1.10 skips a minor: the pre-upgrade Job fails and the upgrade is rolled back.
	_, err := k.c.Upgrade(ctx, helm.Release{Name: "longhorn", Namespace: k.ns, Chart: k.chart(t, "longhorn", "1.10.2"), Values: values, Wait: true, Timeout: time.Minute})
	if err == nil || !strings.Contains(err.Error(), "pre-upgrade hooks failed") {
		t.Fatalf("upgrade 1.8.2 -> 1.10.2: %v, want the pre-upgrade hook to fail", err)
	}
	if st, err := k.c.Get("longhorn", k.ns); err != nil || st.Status != "deployed" || st.ChartVersion != "1.8.2" {
		t.Fatalf("after the refused upgrade: %+v %v", st, err)
	}

	// A failed upgrade (a workload never ready) is rolled back.
	_, err = k.c.Upgrade(ctx, helm.Release{
		Name: "longhorn", Namespace: k.ns, Chart: k.chart(t, "longhorn", "1.9.2"),
		Values: k.values(t, map[string]any{"persistence.defaultClassReplicaCount": 1, "longhornUI.replicas": 2}, "", helm.Set{Name: "fixture.neverReady", Value: "true"}),
		Wait:   true, Timeout: 20 * time.Second,
	})
	if err == nil {
		t.Fatal("upgrade with a never-ready workload succeeded")
	}
	st, err := k.c.Get("longhorn", k.ns)
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != "deployed" || st.ChartVersion != "1.8.2" {
		t.Fatalf("after the failed upgrade: revision %d %s chart %s, want deployed 1.8.2", st.Revision, st.Status, st.ChartVersion)
	}
	poll(t, time.Minute, "the never-ready Deployment to be removed", func() (bool, error) {
		_, err := k.cs.AppsV1().Deployments(k.ns).Get(ctx, "longhorn-fixture-never-ready", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	ui, err := k.cs.AppsV1().Deployments(k.ns).Get(ctx, "longhorn-ui", metav1.GetOptions{})
	if err != nil || *ui.Spec.Replicas != 1 {
		t.Fatalf("longhorn-ui after rollback: %v", err)
	}
	objs, err := st.Objects()
	if err != nil {
		t.Fatal(err)
	}
	if got := helm.StorageClasses(objs); !slices.Equal(got, []string{"longhorn"}) {
		t.Errorf("storage classes %q", got)
	}

	// The pre-delete hook refuses while deleting-confirmation-flag is false.
	err = k.c.Uninstall(ctx, "longhorn", k.ns, helm.UninstallOptions{Wait: true, Timeout: time.Minute})
	if err == nil {
		t.Fatal("uninstall succeeded although deleting-confirmation-flag is false")
	}
	t.Logf("uninstall refused as expected: %v", err)
	if _, err := k.cs.AppsV1().DaemonSets(k.ns).Get(ctx, "longhorn-manager", metav1.GetOptions{}); err != nil {
		t.Fatalf("longhorn-manager gone after a refused uninstall: %v", err)
	}

	// The refused uninstall leaves the release uninstalling; remove it without hooks. The way
	// through: the flag true (a values change, which Longhorn applies to its Setting), then
	// uninstall.
	if err := k.c.Uninstall(ctx, "longhorn", k.ns, helm.UninstallOptions{Wait: true, Timeout: time.Minute, DisableHooks: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := k.c.Install(ctx, helm.Release{
		Name: "longhorn", Namespace: k.ns, Chart: k.chart(t, "longhorn", "1.8.2"),
		Values: k.values(t, map[string]any{"persistence.defaultClassReplicaCount": 1, "longhornUI.replicas": 1, "defaultSettings.deletingConfirmationFlag": "true"}, ""),
		Wait:   true, Timeout: 2 * time.Minute,
	}); err != nil {
		t.Fatal(err)
	}
	if err := k.c.Uninstall(ctx, "longhorn", k.ns, helm.UninstallOptions{Wait: true, Timeout: 2 * time.Minute}); err != nil {
		t.Fatalf("uninstall with the flag set: %v", err)
	}
	if _, err := k.c.Get("longhorn", k.ns); !errors.Is(err, helm.ErrNotFound) {
		t.Fatalf("after uninstall: %v", err)
	}
	dyn, err := dynamic.NewForConfig(k.rc)
	if err != nil {
		t.Fatal(err)
	}
	crds := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	poll(t, time.Minute, "Longhorn's CRDs to go with the release", func() (bool, error) {
		_, err := crds.Get(ctx, "settings.longhorn.io", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

// storeAs rewrites the stored record of a release revision, as an apply that
// was killed half way would have left it.
func storeAs(t *testing.T, k *cluster, mutate func(cfg *action.Configuration)) {
	t.Helper()
	cfg := action.NewConfiguration()
	if err := cfg.Init(helm.NewRESTClientGetter(k.rc, k.ns), k.ns, "secret"); err != nil {
		t.Fatal(err)
	}
	mutate(cfg)
}

func TestIntegrationRecoverPendingInstall(t *testing.T) {
	k := needCluster(t)
	ctx := context.Background()
	rel := helm.Release{
		Name: "openebs", Namespace: k.ns, CreateNamespace: true,
		Chart:  k.chart(t, "openebs", "4.4.0"),
		Values: k.openebs(t, map[string]any{"alloy.enabled": false}, ""),
		Wait:   true, Timeout: 2 * time.Minute,
	}
	if _, err := k.c.Install(ctx, rel); err != nil {
		t.Fatal(err)
	}
	// The provider was killed while Helm was still waiting: revision 1 is
	// pending-install and its objects exist.
	storeAs(t, k, func(cfg *action.Configuration) {
		r, err := helm.AsRelease(cfg.Releases.Get("openebs", 1))
		if err != nil {
			t.Fatal(err)
		}
		r.SetStatus(rcommon.StatusPendingInstall, "Initial install underway")
		if err := cfg.Releases.Update(r); err != nil {
			t.Fatal(err)
		}
	})
	// The install started moments ago and its timeout has not passed: it may still be running.
	var inProgress *helm.InProgressError
	if _, err := k.c.Recover(ctx, "openebs", k.ns, time.Minute, 0); !errors.As(err, &inProgress) {
		t.Fatalf("recovering a release whose install may still run: %v, want an InProgressError", err)
	}
	if st, err := k.c.Get("openebs", k.ns); err != nil || st.Status != "pending-install" || !st.OwnedBy(testOwner) ||
		st.Labels[helm.TimeoutLabel] != "120" {
		t.Fatalf("after a refused recovery: %+v %v", st, err)
	}
	// A client of another owner never touches it, however old.
	storeAs(t, k, func(cfg *action.Configuration) {
		r, err := helm.AsRelease(cfg.Releases.Get("openebs", 1))
		if err != nil {
			t.Fatal(err)
		}
		abandoned(r)
		if err := cfg.Releases.Update(r); err != nil {
			t.Fatal(err)
		}
	})
	other, err := helm.New(k.rc, helm.Options{CacheDir: t.TempDir(), Owner: "someone-else"})
	if err != nil {
		t.Fatal(err)
	}
	var notOwned *helm.NotOwnedError
	if _, err := other.Recover(ctx, "openebs", k.ns, time.Minute, 0); !errors.As(err, &notOwned) || notOwned.Owner != testOwner {
		t.Fatalf("recovering another owner's release: %v, want a NotOwnedError naming %s", err, testOwner)
	}
	if st, err := k.c.Get("openebs", k.ns); err != nil || st.Status != "pending-install" || st.Revision != 1 {
		t.Fatalf("another owner's recovery changed the release: %+v %v", st, err)
	}
	if _, err := k.c.Install(ctx, rel); err == nil {
		t.Fatal("installing over a pending-install release should fail")
	}
	if _, err := k.c.Upgrade(ctx, rel); err == nil || !strings.Contains(err.Error(), "in progress") {
		t.Fatalf("upgrading a pending-install release: %v", err)
	}

	msg, err := k.c.Recover(ctx, "openebs", k.ns, time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msg, "pending-install") || !strings.Contains(msg, "uninstalled") {
		t.Errorf("description %q", msg)
	}
	if _, err := k.c.Get("openebs", k.ns); !errors.Is(err, helm.ErrNotFound) {
		t.Fatalf("after recovery: %v", err)
	}
	st, err := k.c.Install(ctx, rel)
	if err != nil {
		t.Fatalf("reinstall after recovery: %v", err)
	}
	if st.Revision != 1 || st.Status != "deployed" {
		t.Fatalf("reinstalled: %+v", st)
	}
	if msg, err := k.c.Recover(ctx, "openebs", k.ns, time.Minute, 0); err != nil || msg != "" {
		t.Fatalf("recovering a healthy release: %q %v", msg, err)
	}
	if msg, err := k.c.Recover(ctx, "absent", k.ns, time.Minute, 0); err != nil || msg != "" {
		t.Fatalf("recovering a missing release: %q %v", msg, err)
	}
	absent := rel
	absent.Name = "absent"
	if _, err := k.c.Upgrade(ctx, absent); !errors.Is(err, helm.ErrNotFound) {
		t.Fatalf("upgrading a missing release: %v, want ErrNotFound", err)
	}
}

func TestIntegrationInstallCancelled(t *testing.T) {
	k := needCluster(t)
	ctx, cancel := context.WithCancel(context.Background())
	// Cancel while Helm waits for a workload that never becomes ready, as
	// Terraform does when the user interrupts an apply.
	go func() {
		defer cancel()
		deadline := time.Now().Add(time.Minute)
		for time.Now().Before(deadline) {
			if _, err := k.cs.AppsV1().Deployments(k.ns).Get(context.Background(), "openebs-fixture-never-ready", metav1.GetOptions{}); err == nil {
				return
			}
			time.Sleep(100 * time.Millisecond) // polling for the condition, bounded by the deadline
		}
	}()
	start := time.Now()
	_, err := k.c.Install(ctx, helm.Release{
		Name: "openebs", Namespace: k.ns, CreateNamespace: true,
		Chart:  k.chart(t, "openebs", "4.4.0"),
		Values: k.openebs(t, map[string]any{"fixture.neverReady": true}, ""),
		Wait:   true, Timeout: 5 * time.Minute,
	})
	if err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Fatalf("cancelled install: %v", err)
	}
	if d := time.Since(start); d > 2*time.Minute {
		t.Errorf("cancellation took %s", d)
	}
	// The cancelled install was atomic: nothing is left.
	if _, err := k.c.Get("openebs", k.ns); !errors.Is(err, helm.ErrNotFound) {
		t.Fatalf("after a cancelled install: %v", err)
	}
}

func TestIntegrationRecoverPendingUpgrade(t *testing.T) {
	k := needCluster(t)
	ctx := context.Background()
	values := k.openebs(t, map[string]any{"engines.local.lvm.enabled": false, "engines.local.zfs.enabled": false}, "")
	if _, err := k.c.Install(ctx, helm.Release{
		Name: "openebs", Namespace: k.ns, CreateNamespace: true,
		Chart: k.chart(t, "openebs", "4.0.1"), Values: values, Wait: true, Timeout: 2 * time.Minute,
	}); err != nil {
		t.Fatal(err)
	}
	newer := k.chart(t, "openebs", "4.4.0")
	// An upgrade to 4.4.0 was interrupted: revision 2 is pending-upgrade.
	storeAs(t, k, func(cfg *action.Configuration) {
		r1, err := helm.AsRelease(cfg.Releases.Get("openebs", 1))
		if err != nil {
			t.Fatal(err)
		}
		r2 := *r1
		info := *r1.Info
		r2.Info = &info
		r2.Version = 2
		r2.Chart = newer
		r2.SetStatus(rcommon.StatusPendingUpgrade, "Preparing upgrade")
		abandoned(&r2)
		// Labels as Helm copies them from revision 1: the upgrade was someone else's.
		r2.Labels = map[string]string{}
		for k, v := range r1.Labels {
			r2.Labels[k] = v
		}
		if err := cfg.Releases.Create(&r2); err != nil {
			t.Fatal(err)
		}
	})
	var notOwned *helm.NotOwnedError
	if _, err := k.c.Recover(ctx, "openebs", k.ns, time.Minute, 10); !errors.As(err, &notOwned) || !notOwned.Inherited {
		t.Fatalf("recovering a pending upgrade with labels copied from our revision: %v, want an inherited NotOwnedError", err)
	}
	// As this client's own interrupted upgrade labels it.
	storeAs(t, k, func(cfg *action.Configuration) {
		r2, err := helm.AsRelease(cfg.Releases.Get("openebs", 2))
		if err != nil {
			t.Fatal(err)
		}
		r2.Labels[helm.RevisionLabel] = "2"
		if err := cfg.Releases.Update(r2); err != nil {
			t.Fatal(err)
		}
	})
	if _, err := k.c.Upgrade(ctx, helm.Release{Name: "openebs", Namespace: k.ns, Chart: newer, Values: values, Wait: true, Timeout: time.Minute}); err == nil ||
		!strings.Contains(err.Error(), "in progress") {
		t.Fatalf("upgrading a pending-upgrade release: %v", err)
	}
	msg, err := k.c.Recover(ctx, "openebs", k.ns, 2*time.Minute, 10)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msg, "pending-upgrade") || !strings.Contains(msg, "rolled back to the last deployed revision 1") {
		t.Errorf("description %q", msg)
	}
	st, err := k.c.Get("openebs", k.ns)
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != "deployed" || st.Revision != 3 || st.ChartVersion != "4.0.1" {
		t.Fatalf("after recovery: revision %d %s %s", st.Revision, st.Status, st.ChartVersion)
	}
	// The upgrade that was blocked now goes through.
	if st, err := k.c.Upgrade(ctx, helm.Release{Name: "openebs", Namespace: k.ns, Chart: newer,
		Values: k.openebs(t, map[string]any{"engines.local.lvm.enabled": false, "engines.local.zfs.enabled": false, "alloy.enabled": false}, ""),
		Wait:   true, Timeout: 2 * time.Minute}); err != nil || st.ChartVersion != "4.4.0" {
		t.Fatalf("upgrade after recovery: %v", err)
	}

	// No deployed revision to go back to: the pending one is marked failed.
	storeAs(t, k, func(cfg *action.Configuration) {
		hist, err := helm.AsReleases(cfg.Releases.History("openebs"))
		if err != nil {
			t.Fatal(err)
		}
		var last *release.Release
		for _, r := range hist {
			if r.Info.Status == rcommon.StatusDeployed {
				r.SetStatus(rcommon.StatusFailed, "simulated failure")
				if err := cfg.Releases.Update(r); err != nil {
					t.Fatal(err)
				}
			}
			if last == nil || r.Version > last.Version {
				last = r
			}
		}
		next := *last
		info := *last.Info
		next.Info = &info
		next.Version = last.Version + 1
		next.SetStatus(rcommon.StatusPendingRollback, "Rollback underway")
		abandoned(&next)
		next.Labels = map[string]string{helm.OwnerLabel: testOwner, helm.RevisionLabel: strconv.Itoa(next.Version)}
		if err := cfg.Releases.Create(&next); err != nil {
			t.Fatal(err)
		}
	})
	msg, err = k.c.Recover(ctx, "openebs", k.ns, time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msg, "pending-rollback") || !strings.Contains(msg, "marked failed") {
		t.Errorf("description %q", msg)
	}
	if st, err := k.c.Get("openebs", k.ns); err != nil || st.Status != "failed" {
		t.Fatalf("after marking failed: %v %v", st, err)
	}
}

// TestIntegrationUpgradeTakesBackEditedFields: a release installed server-side whose Deployment a
// person changed with `kubectl edit` (another field manager now owns spec.replicas) upgrades
// without a field-manager conflict, and the upgrade puts the chart's value back: the
// configuration wins, as an apply should.
func TestIntegrationUpgradeTakesBackEditedFields(t *testing.T) {
	k := needCluster(t)
	ctx := context.Background()
	rel := helm.Release{
		Name: "openebs", Namespace: k.ns, CreateNamespace: true,
		Chart:  k.chart(t, "openebs", "4.0.1"),
		Values: k.openebs(t, map[string]any{"engines.local.lvm.enabled": false, "engines.local.zfs.enabled": false}, ""),
		Wait:   true, Timeout: 2 * time.Minute,
	}
	st, err := k.c.Install(ctx, rel)
	if err != nil {
		t.Fatal(err)
	}
	wantDrift(ctx, t, k.c, st) // as installed: the server's defaults and others' fields are no drift
	deployments := k.cs.AppsV1().Deployments(k.ns)
	name := "openebs-localpv-provisioner"
	d, err := deployments.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	zero := int32(0)
	d.Spec.Replicas = &zero
	metav1.SetMetaDataAnnotation(&d.ObjectMeta, "edited-by", "kubectl") // a field the chart does not set: no drift
	if _, err := deployments.Update(ctx, d, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	// Only the default mark of the release's class changes: which class is the default is the
	// provider's to keep, not drift.
	if _, err := k.cs.StorageV1().StorageClasses().Patch(ctx, k.class, types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"storageclass.kubernetes.io/is-default-class":"false"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	wantDrift(ctx, t, k.c, st, "Deployment/"+k.ns+"/"+name+" (spec.replicas)")
	rel.Values = k.openebs(t, map[string]any{"engines.local.lvm.enabled": false, "engines.local.zfs.enabled": false, "localpv-provisioner.localpv.resources.requests.cpu": "11m"}, "")
	if _, err := k.c.Upgrade(ctx, rel); err != nil {
		t.Fatalf("upgrade after kubectl edit: %v", err)
	}
	d, err = deployments.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 {
		t.Errorf("replicas after the upgrade: %v, want the chart's 1", d.Spec.Replicas)
	}
	st, err = k.c.Get(rel.Name, rel.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	wantDrift(ctx, t, k.c, st)
	if err := deployments.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wantDrift(ctx, t, k.c, st, "Deployment/"+k.ns+"/"+name+" (missing)")
}

// wantDrift checks that ObjectDrift of st lists exactly want.
func wantDrift(ctx context.Context, t *testing.T, c *helm.Client, st *helm.Status, want ...string) {
	t.Helper()
	got, err := c.ObjectDrift(ctx, st)
	if err != nil {
		t.Fatalf("ObjectDrift: %v", err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("ObjectDrift = %q, want %q", got, want)
	}
}
