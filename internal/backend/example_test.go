package backend_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/helm"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/volumemigration"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/volumes"
)

// TestAccStorageBackend_migrateLonghornExample walks examples/migrate-longhorn-to-openebs through
// the steps of its README on the local cluster, with the fixture charts and local images set in
// an override file: Longhorn installed outside Terraform (as the helm CLI does) with a claim of
// its class that a Deployment writes records to; the release adopted with `terraform import`;
// `apply` installs OpenEBS and moves the claim onto an OpenEBS hostpath volume (every record of
// the source there, the Deployment running on it, the Longhorn volume kept); removing Longhorn
// alone is refused by its destroy guard, which names the kept volume and the migration that
// kept it; delete_sources has the migration delete that volume, and then Longhorn goes.
//
// All on node 2, so that the copy pod and the new volume (WaitForFirstConsumer) follow the
// source volume to a node that is not the first. The Longhorn fixture cannot provision (no
// Longhorn engine runs here): its claim is bound to a static local volume of class `longhorn`,
// which the guard counts as Longhorn's (the class's provisioner is driver.longhorn.io) and the
// copy pod mounts as it would a Longhorn volume. Its reclaim policy is Retain (a Longhorn class's volumes are Delete by default, and Longhorn then
// deletes them; delete_source waits for that, TestDeleteSource).
func TestAccStorageBackend_migrateLonghornExample(t *testing.T) {
	// On node 2: the copy runs there and the new volume, of a WaitForFirstConsumer class, is
	// made there too.
	node := acctest.RequireNodes(t, 2)[1]
	read := func(path string) ([]byte, error) { return node.ReadFile(t, path) }
	dir := "/var/tmp/" + acctest.RandomName("acc-lh-example")
	node.MustRun(t, `mkdir -p "$1"`, dir)
	t.Cleanup(func() { // after the fixture's cleanup, which removes the volumes
		if _, err := node.Run(t, `rm -rf "$1"`, dir); err != nil {
			t.Errorf("removing %s on node %s: %v", dir, node.Name, err)
		}
	})
	f := newFixture(t, acctest.LockLonghorn)
	cli, rc := acctest.DevCLI(t)
	ctx := context.Background()
	n, err := f.client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// Longhorn as the helm CLI installs it (the release carries no provider mark), not the
	// cluster's default class: other tests make claims without a class.
	lh := f.chart("longhorn", "1.8.1")
	lh.CreateNamespace, lh.Wait, lh.Timeout = true, true, 3*time.Minute
	lh.Values = map[string]any{"persistence": map[string]any{"defaultClass": false}}
	if _, err := f.helm.Install(ctx, *lh); err != nil {
		t.Fatal(err)
	}
	src := f.longhornVolume(node, n.Labels[volumes.HostnameLabel], filepath.Join(dir, acctest.RandomName("acc-lh-pv")))
	srcPV := filepath.Base(src)
	acctest.StartWriter(t, f.client, f.ns, "data", read, src)

	class := acctest.RandomName("acc-hostpath")
	base := filepath.Join(dir, "openebs")
	w := acctest.ExampleWorkspace(t, cli, rc, "migrate-longhorn-to-openebs", fmt.Sprintf(`
resource "clusterstorage_storage_backend" "longhorn" {
  namespace = %[2]q
}

resource "clusterstorage_storage_backend" "openebs" {
  repository = %[1]q
  version    = "4.4.0"
  namespace  = %[2]q
  openebs = {
    hostpath_class_name  = %[3]q
    hostpath_base_path   = var.hostpath_base_path
    volume_snapshot_crds = false
  }
}

resource "clusterstorage_volume_migration" "off_longhorn" {
  image             = %[4]q
  image_pull_policy = "Never"
}
`, f.repo, f.ns, class, acctest.RsyncImage))
	vars := fmt.Sprintf("kubeconfig = %q\nhostpath_base_path = %q\n", acctest.Kubeconfig(), base)
	if err := os.WriteFile(filepath.Join(w.Dir, "terraform.tfvars"), []byte(vars), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		out, err := w.Exec(t, args...)
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", filepath.Base(cli), strings.Join(args, " "), err, out)
		}
		return out
	}
	t.Cleanup(func() {
		// After a failure: what the test's namespace and releases leave is removed by the
		// fixture's cleanup; the state is dropped with the workspace.
		if t.Failed() {
			out, _ := w.Exec(t, "show") //nolint:errcheck // shown as it is
			t.Logf("the workspace's last state:\n%s", out)
		}
	})

	// 1. Adopt Longhorn.
	run("import", "clusterstorage_storage_backend.longhorn[0]", f.ns+"/longhorn")

	// 2. Install OpenEBS and move the claim.
	t.Logf("apply:\n%s", run("apply", "-auto-approve"))
	newPV, err := f.checkMovedToHostpath(ctx, read, class, src, srcPV)
	if err != nil {
		t.Fatal(err)
	}
	if pv, err := f.client.CoreV1().PersistentVolumes().Get(ctx, newPV, metav1.GetOptions{}); err != nil || !pinnedTo(pv, n.Labels[volumes.HostnameLabel]) {
		t.Fatalf("the new volume is not on node %s: %v %+v", node.Name, err, pv.Spec.NodeAffinity)
	}
	st, err := f.helm.Get("longhorn", f.ns)
	if err != nil || st.Revision != 1 {
		t.Fatalf("adopting Longhorn changed its release (revision %d, want 1): %v", revision(st), err)
	}
	if out := run("plan", "-detailed-exitcode"); !strings.Contains(out, "No changes") {
		t.Fatalf("the plan after the migration is not empty:\n%s", out)
	}

	// 3a. Longhorn alone: refused while the kept source volume exists.
	out, err := w.Exec(t, "apply", "-auto-approve", "-var", "remove_longhorn=true")
	want := fmt.Sprintf("PersistentVolume %s (driver.longhorn.io, Released, reclaim Retain): claim %s/data (deleted), class longhorn; the source volume a clusterstorage_volume_migration of claim %s/data kept (the claim is on %s now): set delete_source = true on that migration to delete it",
		srcPV, f.ns, f.ns, newPV)
	if err == nil || !strings.Contains(strings.Join(strings.Fields(out), " "), want) {
		t.Fatalf("removing Longhorn while the kept volume exists: %v, want the guard's refusal naming it (%s)\n%s", err, want, out)
	}
	if st, err := f.helm.Get("longhorn", f.ns); err != nil || st.Status != "deployed" {
		t.Fatalf("after the refusal Longhorn is not installed as it was: %+v %v", st, err)
	}

	// 3b. delete_sources: the migration deletes the kept volume.
	run("apply", "-auto-approve", "-var", "delete_sources=true")
	if _, err := f.client.CoreV1().PersistentVolumes().Get(ctx, srcPV, metav1.GetOptions{}); !kube.IsNotFound(err) {
		t.Errorf("the kept Longhorn volume %s is still there: %v", srcPV, err)
	}
	if _, err := read(filepath.Join(src, "records")); err != nil {
		t.Errorf("the data of a Retain volume must stay where it was: %v", err)
	}

	// 4. Then Longhorn goes.
	run("apply", "-auto-approve", "-var", "delete_sources=true", "-var", "remove_longhorn=true")
	if _, err := f.helm.Get("longhorn", f.ns); !errors.Is(err, helm.ErrNotFound) {
		t.Errorf("Longhorn is still installed: %v", err)
	}
	if _, err := f.checkMovedToHostpath(ctx, read, class, src, ""); err != nil {
		t.Error(err)
	}

	// The end: the workload and its claim removed (OpenEBS's guard would keep it otherwise),
	// then the rest destroyed.
	if err := f.client.AppsV1().Deployments(f.ns).Delete(ctx, "writer", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	acctest.DeletePodAndClaim(t, f.client, f.ns, "", "data")
	err = kube.Poll(ctx, 250*time.Millisecond, 2*time.Minute, "the provisioner to delete "+newPV, func(ctx context.Context) (bool, string, error) {
		_, err := f.client.CoreV1().PersistentVolumes().Get(ctx, newPV, metav1.GetOptions{})
		return kube.IsNotFound(err), "it still exists", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	run("destroy", "-auto-approve", "-var", "remove_longhorn=true", "-var", "delete_sources=true")
	if _, err := f.helm.Get("openebs", f.ns); !errors.Is(err, helm.ErrNotFound) {
		t.Errorf("OpenEBS is still installed after destroy: %v", err)
	}
}

// pinnedTo reports whether a volume's node affinity names the node whose hostname label is
// hostname, as a local or hostpath volume's does.
func pinnedTo(pv *corev1.PersistentVolume, hostname string) bool {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return false
	}
	for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		for _, e := range term.MatchExpressions {
			if e.Key == volumes.HostnameLabel && e.Operator == corev1.NodeSelectorOpIn && slices.Equal(e.Values, []string{hostname}) {
				return true
			}
		}
	}
	return false
}

func revision(st *helm.Status) int {
	if st == nil {
		return 0
	}
	return st.Revision
}

// longhornVolume makes a static local volume of class longhorn in the directory dir on node
// (made there; its hostname label is hostname), named after the directory, and the claim "data"
// bound to it; it returns dir.
func (f *fixture) longhornVolume(node acctest.ClusterNode, hostname, dir string) string {
	f.t.Helper()
	ctx := context.Background()
	node.MustRun(f.t, `mkdir -p "$1"`, dir)
	size := corev1.ResourceList{corev1.ResourceStorage: k8sresource.MustParse("64Mi")}
	class := "longhorn"
	_, err := f.client.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: filepath.Base(dir)},
		Spec: corev1.PersistentVolumeSpec{
			Capacity: size, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              class,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: dir}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: volumes.HostnameLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{hostname}}},
			}}}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	_, err = f.client.CoreV1().PersistentVolumeClaims(f.ns).Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: f.ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: &class, VolumeName: filepath.Base(dir),
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: size},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return dir
}

// checkMovedToHostpath checks that the claim "data" is bound to a volume of the hostpath class
// whose directory holds every record of the source volume's (its directory src; both read with
// read), that the writer runs on it, and, when srcPV is not "", that the source volume is kept
// (Retain, marked). It returns the new volume's name.
func (f *fixture) checkMovedToHostpath(ctx context.Context, read acctest.ReadFunc, class, src, srcPV string) (string, error) {
	c, err := f.client.CoreV1().PersistentVolumeClaims(f.ns).Get(ctx, "data", metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	if *c.Spec.StorageClassName != class || c.Status.Phase != corev1.ClaimBound {
		return "", fmt.Errorf("claim data: class %s, phase %s; want %s, Bound", *c.Spec.StorageClassName, c.Status.Phase, class)
	}
	pv, err := f.client.CoreV1().PersistentVolumes().Get(ctx, c.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	var dir string
	switch {
	case pv.Spec.Local != nil:
		dir = pv.Spec.Local.Path
	case pv.Spec.HostPath != nil:
		dir = pv.Spec.HostPath.Path
	default:
		return "", fmt.Errorf("volume %s is not a hostpath volume: %+v", pv.Name, pv.Spec.PersistentVolumeSource)
	}
	records, err := acctest.CheckRecordsMoved(read, src, dir)
	if err != nil {
		return "", err
	}
	f.t.Logf("claim data is on %s (%s): %d records moved", pv.Name, dir, records)
	acctest.WaitRecords(f.t, f.client, f.ns, read, dir, records+10) // the writer runs again, there
	if srcPV == "" {
		return pv.Name, nil
	}
	old, err := f.client.CoreV1().PersistentVolumes().Get(ctx, srcPV, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("the Longhorn volume was not kept: %w", err)
	}
	if to := old.Annotations[volumemigration.AnnotationMigratedTo]; to != f.ns+"/data "+pv.Name || old.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain {
		return "", fmt.Errorf("the Longhorn volume: policy %s, %s %q", old.Spec.PersistentVolumeReclaimPolicy, volumemigration.AnnotationMigratedTo, to)
	}
	return pv.Name, nil
}
