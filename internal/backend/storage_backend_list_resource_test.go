package backend_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/helm"
)

// TestAccStorageBackend_adoptWithQuery adopts a whole cluster's storage as a user of Terraform
// 1.14+ does, through the real CLI and the provider built from this tree: OpenEBS installed by the
// helm CLI (Helm 4) with the chart's defaults, a second OpenEBS release that Flux manages (its
// release carries helm-controller's labels), two classes and three local volumes made with the
// Kubernetes API. A query over every namespace lists the first release and names the second's
// owner in a warning; then a .tfquery.hcl with include_resource and `terraform query
// -generate-config-out=generated.tf` writes six resource and import blocks (not the Flux-managed
// release), `terraform plan` shows six imports and no change, apply imports them, the next plan is
// empty, and nothing on the cluster changed: the release's revision and every class's and volume's
// resourceVersion are the same. Skipped under OpenTofu and Terraform before 1.14 (no list
// resources).
func TestAccStorageBackend_adoptWithQuery(t *testing.T) {
	acctest.RequireQuery(t) // before DevCLI builds the provider
	// The chart's defaults turn Mayastor (its classes have fixed names) on: the lock of the tests
	// that install it.
	f := newFixture(t, acctest.LockMayastorNode)
	cli, rc := acctest.DevCLI(t)
	sshd, node, root := acctest.StartSSHD(t), acctest.Node(t), t.TempDir()
	ctx := context.Background()
	const version = "4.0.1"

	// OpenEBS as a person installs it: `helm install` with the chart's defaults, but for what a
	// cluster that already has OpenEBS needs: the cluster is not empty (`make demo` leaves its own
	// OpenEBS release, its openebs-hostpath class and the VolumeSnapshot CRDs in place), and both
	// are cluster-wide.
	hostpathClass := acctest.RandomName("acc-adopt-hostpath")
	helmRun(t, "install", "openebs", "openebs", "--repo", f.repo, "--version", version, "--namespace", f.ns, "--create-namespace",
		"--set", "localpv-provisioner.hostpathClass.name="+hostpathClass+",openebs-crds.csi.volumeSnapshots.enabled=false")
	// A release Flux's helm-controller manages (its labels on the release record); engines and
	// CRDs off and a class of its own, beside the first.
	flux := acctest.RandomName("acc-flux")
	t.Cleanup(func() { // before the fixture's cleanup deletes the namespace
		if err := f.helm.Uninstall(context.Background(), flux, f.ns, helm.UninstallOptions{Wait: true, Timeout: time.Minute, DisableHooks: true}); err != nil {
			t.Logf("cleanup: %v", err)
		}
	})
	helmRun(t, "install", flux, "openebs", "--repo", f.repo, "--version", version, "--namespace", f.ns,
		"--labels", "helm.toolkit.fluxcd.io/name="+flux+",helm.toolkit.fluxcd.io/namespace=flux-system",
		"--set", "engines.replicated.mayastor.enabled=false,engines.local.lvm.enabled=false,engines.local.zfs.enabled=false",
		"--set", "openebs-crds.csi.volumeSnapshots.enabled=false,localpv-provisioner.hostpathClass.name="+acctest.RandomName("acc-flux-hostpath"))

	// Hand-made classes and local volumes.
	provisioner := "example.com/" + acctest.RandomName("acc-adopt")
	fast, slow := acctest.RandomName("acc-adopt-fast"), acctest.RandomName("acc-adopt-slow")
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	for _, sc := range []*storagev1.StorageClass{
		{ObjectMeta: metav1.ObjectMeta{Name: fast, Labels: map[string]string{"tier": "fast"}}, Provisioner: provisioner, VolumeBindingMode: &wffc, MountOptions: []string{"noatime"}},
		{ObjectMeta: metav1.ObjectMeta{Name: slow}, Provisioner: provisioner, VolumeBindingMode: &wffc, Parameters: map[string]string{"tier": "hdd"}},
	} {
		if _, err := f.client.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = f.client.StorageV1().StorageClasses().Delete(context.Background(), sc.Name, metav1.DeleteOptions{}) //nolint:errcheck // the test's own class
		})
	}
	pvs := []string{acctest.RandomName("acc-adopt-pv"), acctest.RandomName("acc-adopt-pv"), acctest.RandomName("acc-adopt-pv")}
	for i, name := range pvs {
		class := fast
		if i == 2 {
			class = slow
		}
		handMadeLocalPV(t, f, name, class, node, filepath.Join(root, name))
	}

	versions := func() map[string]string {
		v := acctest.ResourceVersions(t, f.client, []string{fast, slow, hostpathClass}, pvs)
		st, err := f.helm.Get("openebs", f.ns)
		if err != nil {
			t.Fatal(err)
		}
		v["release openebs"] = strconv.Itoa(st.Revision)
		return v
	}
	before := versions()

	w := acctest.NewWorkspace(t, cli, rc, acctest.ProviderConfigSSH(sshd, node))
	fluxWarning := fmt.Sprintf("Not offered for import: %s/%s (openebs %s, revision 1, deployed), managed by Flux (HelmRelease flux-system/%s)", f.ns, flux, version, flux)

	// 1. Every namespace, identities only: the release by name, the Flux-managed one as a warning.
	w.WriteFile(t, "adopt.tfquery.hcl", acctest.LoadConfig(t, "query_everywhere.tfquery.hcl"))
	out, err := w.Query(t)
	if err != nil {
		t.Fatalf("terraform query: %v\n%s", err, out)
	}
	flat := strings.Join(strings.Fields(out), " ")
	if !strings.Contains(flat, f.ns+"/openebs (openebs "+version+", revision 1, deployed)") || !strings.Contains(flat, fluxWarning) {
		t.Errorf("the query over every namespace does not list %s/openebs and warn about %s/%s:\n%s", f.ns, f.ns, flux, out)
	}

	// 2. The adoption: the test's namespace, classes and volumes, with their settings.
	w.WriteFile(t, "adopt.tfquery.hcl", acctest.LoadConfig(t, "query_namespace.tfquery.hcl", f.ns)+acctest.AdoptQuery(t, provisioner, fast, node, slow))
	out = w.AdoptGenerated(t, map[string]int{
		`resource "clusterstorage_storage_backend"`: 1, `resource "clusterstorage_storage_class"`: 2, `resource "clusterstorage_local_pv"`: 3,
		"import {": 6, "identity = {": 6, `type = "openebs"`: 1, flux: 0,
		`hostpath_class_name = "` + hostpathClass + `"`: 1, // the typed setting, not raw values
	}, 6)
	if !strings.Contains(strings.Join(strings.Fields(out), " "), fluxWarning) {
		t.Errorf("terraform query does not say why %s/%s is left out:\n%s", f.ns, flux, out)
	}
	if after := versions(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("the adoption changed the cluster: %v, was %v", after, before)
	}
	// The state goes with the workspace; the fixture and the test's cleanups remove the objects.
}

// helmRun runs the Helm 4 CLI (tools/helm) against the test cluster with its own state
// directories, as a person does; the test fails when it fails.
func helmRun(t *testing.T, args ...string) {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(helmCLI(t, "helm"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+acctest.Kubeconfig(), "HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// handMadeLocalPV makes a local PersistentVolume pinned to node with the Kubernetes API (its
// directory made first), removed at the test's end, and waits until it is Available.
func handMadeLocalPV(t *testing.T, f *fixture, name, class, node, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: k8sresource.MustParse("5Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              class,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: dir}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
			}}}},
		},
	}
	ctx := context.Background()
	if _, err := f.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = f.client.CoreV1().PersistentVolumes().Delete(context.Background(), name, metav1.DeleteOptions{}) //nolint:errcheck // the test's own volume
	})
	acctest.WaitVolumeAvailable(t, f.client, name)
}
