package volumemigration_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/volumemigration"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/volumes"
)

// fixture is a namespace with two StorageClasses of static local volumes on the node this test
// runs on (kubernetes.io/no-provisioner, WaitForFirstConsumer, Retain): the source class with
// one volume per claim the test makes, and the target class with one free volume. The volumes'
// directories are on this machine, so the test reads the files on both sides directly. Cleanup
// removes everything, in an order that lets each thing go: workloads and pods, claims, volumes,
// classes; then the test removes the directories.
type fixture struct {
	client         kubernetes.Interface
	node           string
	hostname       string // its kubernetes.io/hostname label
	ns             string
	source, target string // class names
	base           string // the volumes' directories are below it
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	client := acctest.Kube(t)
	node := acctest.LocalNodeName(t, acctest.Kubeconfig())
	if node == "" {
		needed(t, "no node of the cluster runs on this machine (the nodes file of the local cluster names none): the test reads the volumes' files here")
	}
	ctx := context.Background()
	// The kubelet lists the node's images in its status every few seconds: right after the
	// cluster starts, an image it has may not be listed yet.
	var n *corev1.Node
	missing := ""
	err := kube.Poll(ctx, time.Second, 30*time.Second, "the node's status to list the images", func(ctx context.Context) (bool, string, error) {
		got, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		n, missing = got, ""
		for _, image := range []string{acctest.RsyncImage, acctest.BusyboxImage} {
			if !hasImage(got, image) {
				missing = image
				return false, image + " is not listed", nil
			}
		}
		return true, "", nil
	})
	if n == nil {
		t.Fatal(err)
	}
	if missing != "" {
		needed(t, fmt.Sprintf("image %s is not on node %s: tools/kube/cluster.sh up builds and imports it (a cluster started before it had the image needs `tools/kube/cluster.sh down` and up)", missing, node))
	}
	f := &fixture{client: client, node: node, hostname: n.Labels[volumes.HostnameLabel], ns: acctest.RandomName("migration"),
		source: acctest.RandomName("migration-from"), target: acctest.RandomName("migration-to")}
	// Removed after the cleanup below, which runs first (cleanups run last in, first out).
	base := t.TempDir()
	t.Cleanup(func() { f.cleanup(t) })
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, class := range []string{f.source, f.target} {
		wffc, retain := storagev1.VolumeBindingWaitForFirstConsumer, corev1.PersistentVolumeReclaimRetain
		_, err := client.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{
			ObjectMeta:  metav1.ObjectMeta{Name: class},
			Provisioner: "kubernetes.io/no-provisioner", VolumeBindingMode: &wffc, ReclaimPolicy: &retain,
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	f.base = base
	return f
}

// hostpathClass makes a StorageClass as OpenEBS's hostpath classes are (provisioner
// openebs.io/local, StorageType and BasePath in its cas.openebs.io/config annotation), removed
// when the test ends.
func (f *fixture) hostpathClass(t *testing.T, basePath string) string {
	t.Helper()
	name := acctest.RandomName("migration-hostpath")
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	_, err := f.client.StorageV1().StorageClasses().Create(context.Background(), &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
			"cas.openebs.io/config": "- name: StorageType\n  value: hostpath\n- name: BasePath\n  value: " + basePath + "\n",
		}},
		Provisioner: "openebs.io/local", VolumeBindingMode: &wffc,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.client.StorageV1().StorageClasses().Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !kube.IsNotFound(err) {
			t.Errorf("removing StorageClass %s: %v", name, err)
		}
	})
	return name
}

// needed skips the test for want of something the cluster lacks, or fails it in CI.
func needed(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(why)
	}
	t.Skip(why)
}

func hasImage(n *corev1.Node, image string) bool {
	for _, img := range n.Status.Images {
		for _, name := range img.Names {
			if name == image {
				return true
			}
		}
	}
	return false
}

// volume makes a static local volume of class on this machine's node, in a directory of its own.
func (f *fixture) volume(t *testing.T, name, class string) string {
	t.Helper()
	return f.volumeWith(t, name, class, corev1.ReadWriteOnce)
}

// volumeWith makes a static local volume of class with one access mode.
func (f *fixture) volumeWith(t *testing.T, name, class string, mode corev1.PersistentVolumeAccessMode) string {
	t.Helper()
	dir := filepath.Join(f.base, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := f.client.CoreV1().PersistentVolumes().Create(context.Background(), &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: k8sresource.MustParse("64Mi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{mode},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              class,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: dir}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				// The volume binder matches a volume's node affinity against node labels only.
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: volumes.HostnameLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{f.hostname}}},
			}}}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// claim makes a ReadWriteOnce claim of the source class, bound to the volume whose directory is
// dir (volume's result), or to any volume of the class when dir is "".
func (f *fixture) claim(t *testing.T, name, dir string) {
	t.Helper()
	f.claimWith(t, name, dir, corev1.ReadWriteOnce)
}

// claimWith makes a claim of the source class with one access mode, bound as for claim. A test
// with two volumes of the class names each claim's: the binder picks either otherwise, and a
// test once waited for records in the volume the other claim had been given.
func (f *fixture) claimWith(t *testing.T, name, dir string, mode corev1.PersistentVolumeAccessMode) {
	t.Helper()
	class := f.source
	volume := ""
	if dir != "" {
		volume = filepath.Base(dir) // volumeWith names the volume after its directory
	}
	_, err := f.client.CoreV1().PersistentVolumeClaims(f.ns).Create(context.Background(), &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns, Labels: map[string]string{"app": name}, Annotations: map[string]string{"team": "storage"}},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: &class,
			AccessModes:      []corev1.PersistentVolumeAccessMode{mode},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: k8sresource.MustParse("64Mi")}},
			VolumeName:       volume,
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// writer makes the Deployment "writer" of one replica that writes records to the claim "data"
// (its volume's directory is dir), and waits until it has written some.
func (f *fixture) writer(t *testing.T, dir string) {
	t.Helper()
	acctest.StartWriter(t, f.client, f.ns, "data", os.ReadFile, dir)
}

// waitRecords waits until the records file in dir holds more than n lines.
func (f *fixture) waitRecords(t *testing.T, dir string, n int) {
	t.Helper()
	acctest.WaitRecords(t, f.client, f.ns, os.ReadFile, dir, n)
}

func (f *fixture) cleanup(t *testing.T) {
	ctx := context.Background()
	// The namespace's workloads, pods and claims first: the volumes go once no claim holds them.
	err := f.client.CoreV1().Namespaces().Delete(ctx, f.ns, metav1.DeleteOptions{})
	if err != nil && !kube.IsNotFound(err) {
		t.Errorf("deleting namespace %s: %v", f.ns, err)
	}
	err = kube.Poll(ctx, 250*time.Millisecond, 3*time.Minute, "namespace "+f.ns+" to be deleted", func(ctx context.Context) (bool, string, error) {
		_, err := f.client.CoreV1().Namespaces().Get(ctx, f.ns, metav1.GetOptions{})
		return kube.IsNotFound(err), "it still exists", nil
	})
	if err != nil {
		t.Error(err)
	}
	pvs, err := f.client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Error(err)
		return
	}
	for _, pv := range pvs.Items {
		if pv.Spec.StorageClassName != f.source && pv.Spec.StorageClassName != f.target {
			continue
		}
		if err := f.client.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{}); err != nil && !kube.IsNotFound(err) {
			t.Errorf("deleting volume %s: %v", pv.Name, err)
		}
		err = kube.Poll(ctx, 250*time.Millisecond, time.Minute, "volume "+pv.Name+" to be deleted", func(ctx context.Context) (bool, string, error) {
			_, err := f.client.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
			return kube.IsNotFound(err), "it still exists", nil
		})
		if err != nil {
			t.Error(err)
		}
	}
	for _, class := range []string{f.source, f.target} {
		if err := f.client.StorageV1().StorageClasses().Delete(ctx, class, metav1.DeleteOptions{}); err != nil && !kube.IsNotFound(err) {
			t.Errorf("deleting StorageClass %s: %v", class, err)
		}
	}
}

func (f *fixture) config(claim, class string) string {
	return f.configDelete(claim, class, false)
}

func (f *fixture) configDelete(claim, class string, deleteSource bool) string {
	return acctest.ProviderConfig() + fmt.Sprintf(`
resource "clusterstorage_volume_migration" "test" {
  namespace         = %q
  claim             = %q
  storage_class     = %q
  image             = %q
  image_pull_policy = "Never"
  delete_source     = %t
}
`, f.ns, claim, class, acctest.RsyncImage, deleteSource)
}

// TestAccVolumeMigration_deployment moves the claim of a Deployment that writes numbered records
// from one class of local volumes to another while it writes: after the apply every record the
// source holds (it is not written after the scale-down) is on the new volume, byte for byte, at
// its start; the Deployment runs again and writes on the new volume; the source volume is kept
// until delete_source = true (an update).
// Before that, in the same namespace: clusterstorage_volumes lists both claims of the source
// class with their workloads, and a claim mounted by a pod no controller owns, a class without
// room (static volumes too small; an OpenEBS hostpath class whose base path has too little free
// space, with the provider's ssh block), and a class that does not exist, are refused at plan.
func TestAccVolumeMigration_deployment(t *testing.T) {
	acctest.RunsUnder(t, acctest.EveryCLI)
	f := newFixture(t)
	src := f.volume(t, acctest.RandomName("migration-src"), f.source)
	bare := f.volume(t, acctest.RandomName("migration-bare"), f.source)
	dst := f.volume(t, acctest.RandomName("migration-dst"), f.target)
	f.claim(t, "data", src)
	f.claim(t, "scratch", bare)
	f.writer(t, src)
	_, err := f.client.CoreV1().Pods(f.ns).Create(context.Background(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "debug", Namespace: f.ns}, Spec: acctest.PodOnClaim("scratch", "sleep 3600"),
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	srcPV := filepath.Base(src)
	dstPV := filepath.Base(dst)
	name := "clusterstorage_volume_migration.test"
	// An OpenEBS hostpath class (OpenEBS itself is not needed: the plan reads the class and
	// measures its base path on the source volume's node, over SSH, here through a test sshd).
	hostpath := f.hostpathClass(t, filepath.Join(f.base, "hostpath"))
	sshd := acctest.StartSSHD(t)
	huge := func(config string) string {
		return strings.Replace(config, `image_pull_policy = "Never"`, "image_pull_policy = \"Never\"\n  size              = \"1Pi\"", 1)
	}

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{
			{
				// The inventory: both claims of the source class, with their workloads.
				Config: acctest.ProviderConfig() + fmt.Sprintf(`
data "clusterstorage_volumes" "test" {
  namespace      = %q
  storage_class  = %q
  label_selector = "app in (data, scratch)"
}
`, f.ns, f.source),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("data.clusterstorage_volumes.test", tfjsonpath.New("volumes"), knownvalue.ListExact([]knownvalue.Check{
						knownvalue.ObjectPartial(map[string]knownvalue.Check{
							"key": knownvalue.StringExact(f.ns + "/data"), "volume": knownvalue.StringExact(srcPV), "phase": knownvalue.StringExact("Bound"),
							"driver": knownvalue.StringExact("kubernetes.io/no-provisioner"), "node": knownvalue.StringExact(f.hostname), "size": knownvalue.StringExact("64Mi"),
							"workloads": knownvalue.ListExact([]knownvalue.Check{knownvalue.ObjectExact(map[string]knownvalue.Check{
								"kind": knownvalue.StringExact("Deployment"), "name": knownvalue.StringExact("writer"), "replicas": knownvalue.Int64Exact(1)})}),
						}),
						knownvalue.ObjectPartial(map[string]knownvalue.Check{
							"name": knownvalue.StringExact("scratch"),
							"workloads": knownvalue.ListExact([]knownvalue.Check{knownvalue.ObjectExact(map[string]knownvalue.Check{
								"kind": knownvalue.StringExact("Pod"), "name": knownvalue.StringExact("debug"), "replicas": knownvalue.Int64Exact(1)})}),
						}),
					})),
				},
			},
			{
				Config:      f.config("scratch", f.target),
				PlanOnly:    true,
				ExpectError: acctest.ErrorWords("Pod debug mounts it and has no owner that could start it again"),
			},
			{
				// The target class's one Available volume is 64Mi.
				Config:      strings.Replace(f.config("data", f.target), `image_pull_policy = "Never"`, "image_pull_policy = \"Never\"\n  size              = \"1Gi\"", 1),
				PlanOnly:    true,
				ExpectError: acctest.ErrorWords("has no Available volume of at least 1Gi on node " + f.node + ", where the source volume is"),
			},
			{
				// Its base path's filesystem has far less than 1Pi free on the source's node.
				Config:      strings.Replace(huge(f.config("data", hostpath)), acctest.ProviderConfig(), acctest.ProviderConfigSSH(sshd, f.node), 1),
				PlanOnly:    true,
				ExpectError: acctest.ErrorWords("It is an OpenEBS hostpath class: its volumes are directories under " + filepath.Join(f.base, "hostpath") + " on node " + f.node + ", where the new volume is to be, and its filesystem has"),
			},
			{
				// Without the provider's ssh block that room is not known: the plan goes ahead.
				Config:             huge(f.config("data", hostpath)),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				Config:      f.config("data", "no-such-class"),
				PlanOnly:    true,
				ExpectError: acctest.ErrorWords(`The cluster has no StorageClass "no-such-class"`),
			},
			{
				Config: f.config("data", f.target),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(name, tfjsonpath.New("id"), knownvalue.StringExact(f.ns+"/data")),
					statecheck.ExpectKnownValue(name, tfjsonpath.New("source_volume"), knownvalue.StringExact(srcPV)),
					statecheck.ExpectKnownValue(name, tfjsonpath.New("volume"), knownvalue.StringExact(dstPV)),
					statecheck.ExpectKnownValue(name, tfjsonpath.New("delete_source"), knownvalue.Bool(false)),
					statecheck.ExpectKnownValue(name, tfjsonpath.New("migrated_at"), knownvalue.NotNull()),
				},
				Check: func(*terraform.State) error { return f.checkMigrated(t, src, dst, srcPV, dstPV) },
			},
			{
				Config:   f.config("data", f.target),
				PlanOnly: true,
			},
			{
				ResourceName:                         name,
				ImportState:                          true,
				ImportStateId:                        f.ns + "/data",
				ImportStateVerify:                    true,
				ImportStateVerifyIdentifierAttribute: "id",
				ImportStateVerifyIgnore:              []string{"image", "image_pull_policy", "timeouts"},
			},
			{
				// delete_source in an update: the kept source volume goes (its policy was Retain:
				// the PersistentVolume object is deleted, the data stays in its directory).
				Config: f.configDelete("data", f.target, true),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(name, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(name, tfjsonpath.New("delete_source"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue(name, tfjsonpath.New("source_volume"), knownvalue.StringExact(srcPV)),
				},
				Check: func(*terraform.State) error {
					if _, err := os.Stat(filepath.Join(src, "records")); err != nil {
						return fmt.Errorf("the data of a Retain volume must stay: %w", err)
					}
					return kube.Poll(context.Background(), 250*time.Millisecond, time.Minute, "source volume "+srcPV+" to be deleted", func(ctx context.Context) (bool, string, error) {
						_, err := f.client.CoreV1().PersistentVolumes().Get(ctx, srcPV, metav1.GetOptions{})
						return kube.IsNotFound(err), "it still exists", nil
					})
				},
			},
		},
		CheckDestroy: func(*terraform.State) error {
			// Destroy forgets: the claim stays on the new volume, the source volume stays.
			c, err := f.client.CoreV1().PersistentVolumeClaims(f.ns).Get(context.Background(), "data", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if c.Spec.VolumeName != dstPV || c.Status.Phase != corev1.ClaimBound {
				return fmt.Errorf("after destroy the claim is on %q (%s), want %s", c.Spec.VolumeName, c.Status.Phase, dstPV)
			}
			return nil
		},
	})
}

// checkClaim checks that the claim data is bound to volume pv of class, with the labels and
// annotations claimWith gave it, and returns it.
func (f *fixture) checkClaim(ctx context.Context, pv, class string) (*corev1.PersistentVolumeClaim, error) {
	c, err := f.client.CoreV1().PersistentVolumeClaims(f.ns).Get(ctx, "data", metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if c.Spec.VolumeName != pv || c.Status.Phase != corev1.ClaimBound || *c.Spec.StorageClassName != class {
		return nil, fmt.Errorf("claim: volume %q, phase %s, class %q; want %s, Bound, %s", c.Spec.VolumeName, c.Status.Phase, *c.Spec.StorageClassName, pv, class)
	}
	if c.Labels["app"] != "data" || c.Annotations["team"] != "storage" {
		return nil, fmt.Errorf("the claim lost its labels or annotations: %v %v", c.Labels, c.Annotations)
	}
	return c, nil
}

// checkMigrated checks what a migration of claim data from the volume in src to the one in dst
// left: the claim (same labels and annotations) bound to the new volume, every record of the
// source at the start of the new volume's file, the writer running and writing there, the source
// volume kept and marked.
func (f *fixture) checkMigrated(t *testing.T, src, dst, srcPV, dstPV string) error {
	ctx := context.Background()
	if _, err := f.checkClaim(ctx, dstPV, f.target); err != nil {
		return err
	}
	records, err := acctest.CheckRecordsMoved(os.ReadFile, src, dst)
	if err != nil {
		return err
	}
	t.Logf("records on the source at the scale-down: %d", records)
	// The writer runs again, on the new volume.
	f.waitRecords(t, dst, records+10)
	pv, err := f.client.CoreV1().PersistentVolumes().Get(ctx, srcPV, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("the source volume is gone: %w", err)
	}
	if pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain || !strings.HasPrefix(pv.Annotations[volumemigration.AnnotationMigratedTo], f.ns+"/data ") {
		return fmt.Errorf("source volume: policy %s, annotations %v", pv.Spec.PersistentVolumeReclaimPolicy, pv.Annotations)
	}
	d, err := f.client.AppsV1().Deployments(f.ns).Get(ctx, "writer", metav1.GetOptions{})
	if err != nil {
		return err
	}
	if d.Status.ReadyReplicas != 1 {
		return fmt.Errorf("the writer has %d Ready replicas", d.Status.ReadyReplicas)
	}
	if v, ok := d.Annotations[volumemigration.AnnotationStopped]; ok {
		return fmt.Errorf("the writer still carries the stop record: %s", v)
	}
	return nil
}

// TestAccVolumeMigration_restoreOnDestroy: restore_on_destroy = true with delete_source = true is
// refused at plan; a claim migrated with restore_on_destroy = true is moved back onto its source
// volume by the destroy, while its Deployment writes: every record on the new volume at the stop
// is on the source volume after it, the Deployment writes there again, the source volume has its
// reclaim policy from before (Delete) and is no longer marked, the volume the claim left (a static
// volume: no provisioner made it) is kept, marked, no temporary claim is left and no record on
// the claim.
func TestAccVolumeMigration_restoreOnDestroy(t *testing.T) {
	f := newFixture(t)
	src, dst := f.restoreFixture(t)
	srcPV, dstPV := filepath.Base(src), filepath.Base(dst)
	restore := func(config string) string {
		return strings.Replace(config, `image_pull_policy = "Never"`, "image_pull_policy = \"Never\"\n  restore_on_destroy = true", 1)
	}
	var atMigration int
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:      restore(f.configDelete("data", f.target, true)),
				PlanOnly:    true,
				ExpectError: acctest.ErrorWords("restore_on_destroy = true moves the claim back onto its source volume when the resource is destroyed, and delete_source = true deletes that volume"),
			},
			{
				Config: restore(f.config("data", f.target)),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("clusterstorage_volume_migration.test", tfjsonpath.New("restore_on_destroy"), knownvalue.Bool(true)),
				},
				Check: func(*terraform.State) error {
					if err := f.checkMigrated(t, src, dst, srcPV, dstPV); err != nil {
						return err
					}
					b, err := os.ReadFile(filepath.Join(dst, "records"))
					atMigration = bytes.Count(b, []byte("\n"))
					return err
				},
			},
		},
		CheckDestroy: func(*terraform.State) error { return f.checkRestored(t, src, dst, srcPV, dstPV, atMigration) },
	})
}

// TestAccVolumeMigration_restoreResumed: a destroy with restore_on_destroy stops as a killed
// provider would in the middle of its swap (the claim deleted, not made again yet); the refresh
// keeps the migration in state (the claim to make again is recorded on the source volume), and
// the next destroy finishes the move back: nothing lost, as TestAccVolumeMigration_restoreOnDestroy
// checks.
func TestAccVolumeMigration_restoreResumed(t *testing.T) {
	f := newFixture(t)
	src, dst := f.restoreFixture(t)
	srcPV, dstPV := filepath.Base(src), filepath.Base(dst)
	config := strings.Replace(f.config("data", f.target), `image_pull_policy = "Never"`, "image_pull_policy = \"Never\"\n  restore_on_destroy = true", 1)
	var atMigration int
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: config,
				Check: func(*terraform.State) error {
					b, err := os.ReadFile(filepath.Join(dst, "records"))
					atMigration = bytes.Count(b, []byte("\n"))
					return err
				},
			},
			{
				PreConfig: func() {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
					defer cancel()
					s, done, err := volumemigration.RestoreSpec(ctx, f.client, volumemigration.Spec{
						Namespace: f.ns, Claim: "data", Image: acctest.RsyncImage, PullPolicy: "Never",
					}, srcPV)
					if err != nil || done {
						t.Fatalf("RestoreSpec: done %t, %v", done, err)
					}
					m := &volumemigration.Migrator{Client: f.client, Spec: s, Log: func(msg string, fields map[string]any) { t.Logf("killed restore: %s %v", msg, fields) }}
					if err := volumemigration.RunKilledAfterClaimDeleted(ctx, m); err != volumemigration.ErrKilled {
						t.Fatalf("the killed restore returned %v", err)
					}
					if _, err := f.client.CoreV1().PersistentVolumeClaims(f.ns).Get(ctx, "data", metav1.GetOptions{}); !kube.IsNotFound(err) {
						t.Fatalf("after the killed restore the claim is there (%v), want it deleted", err)
					}
				},
				Config: config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("clusterstorage_volume_migration.test", tfjsonpath.New("source_volume"), knownvalue.StringExact(srcPV)),
				},
			},
		},
		CheckDestroy: func(*terraform.State) error {
			return f.checkRestored(t, src, dst, srcPV, dstPV, atMigration)
		},
	})
}

// restoreFixture makes the source and target volumes of a restore test (their directories), the
// claim data on the source and its writer. The source volume's reclaim policy is Delete, which
// the migration records and the restore must give back (a static volume Bound again is not
// deleted by it; the cleanup deletes the objects).
func (f *fixture) restoreFixture(t *testing.T) (src, dst string) {
	t.Helper()
	src = f.volume(t, acctest.RandomName("migration-src"), f.source)
	dst = f.volume(t, acctest.RandomName("migration-dst"), f.target)
	_, err := f.client.CoreV1().PersistentVolumes().Patch(context.Background(), filepath.Base(src), types.MergePatchType,
		[]byte(`{"spec":{"persistentVolumeReclaimPolicy":"Delete"}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f.claim(t, "data", src)
	f.writer(t, src)
	return src, dst
}

// checkRestored checks what a destroy with restore_on_destroy left: see
// TestAccVolumeMigration_restoreOnDestroy. atMigration is the records the new volume held after
// the migration: the Deployment wrote more on it before the destroy, all of which must be back.
func (f *fixture) checkRestored(t *testing.T, src, dst, srcPV, dstPV string, atMigration int) error {
	ctx := context.Background()
	c, err := f.checkClaim(ctx, srcPV, f.source)
	if err != nil {
		return err
	}
	if v, ok := c.Annotations[volumemigration.AnnotationProgress]; ok {
		return fmt.Errorf("the restore left its record on the claim: %s", v)
	}
	moved, err := os.ReadFile(filepath.Join(dst, "records"))
	if err != nil {
		return err
	}
	back, err := os.ReadFile(filepath.Join(src, "records"))
	if err != nil {
		return err
	}
	if n := bytes.Count(moved, []byte("\n")); n <= atMigration {
		return fmt.Errorf("the new volume holds %d records, no more than right after the migration (%d): the test proves nothing", n, atMigration)
	}
	if !bytes.HasPrefix(back, moved) {
		return fmt.Errorf("the source volume's records (%d bytes) do not begin with the %d bytes the new volume held at the stop", len(back), len(moved))
	}
	t.Logf("records moved back: %d (%d written after the migration)", bytes.Count(moved, []byte("\n")), bytes.Count(moved, []byte("\n"))-atMigration)
	f.waitRecords(t, src, bytes.Count(moved, []byte("\n"))+10) // the writer runs again, on the source volume
	pv, err := f.client.CoreV1().PersistentVolumes().Get(ctx, srcPV, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
		return fmt.Errorf("the source volume's reclaim policy is %s, want Delete (its own, from before the migration)", pv.Spec.PersistentVolumeReclaimPolicy)
	}
	for _, a := range []string{volumemigration.AnnotationMigratedTo, volumemigration.AnnotationReclaimPolicy, volumemigration.AnnotationProgress} {
		if v, ok := pv.Annotations[a]; ok {
			return fmt.Errorf("the source volume still carries %s: %s", a, v)
		}
	}
	left, err := f.client.CoreV1().PersistentVolumes().Get(ctx, dstPV, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("the static volume the claim left is gone: %w", err)
	}
	if left.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain || !strings.HasPrefix(left.Annotations[volumemigration.AnnotationMigratedTo], f.ns+"/data "+srcPV) {
		return fmt.Errorf("the volume the claim left: policy %s, annotations %v", left.Spec.PersistentVolumeReclaimPolicy, left.Annotations)
	}
	claims, err := f.client.CoreV1().PersistentVolumeClaims(f.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	if len(claims.Items) != 1 {
		return fmt.Errorf("%d claims after the restore, want only the writer's", len(claims.Items))
	}
	d, err := f.client.AppsV1().Deployments(f.ns).Get(ctx, "writer", metav1.GetOptions{})
	if err != nil {
		return err
	}
	if *d.Spec.Replicas != 1 || d.Status.ReadyReplicas != 1 {
		return fmt.Errorf("the writer asks for %d replicas and has %d Ready, want 1 and 1", *d.Spec.Replicas, d.Status.ReadyReplicas)
	}
	return nil
}

// The provider killed at four points of a migration (issue 28's fault list): each time the next
// apply resumes from what is recorded and finishes; nothing is lost and the workload runs.

// TestAccVolumeMigration_resumeAfterCopy: a run stops as a killed provider would once the copy
// made while the Deployment runs is done (the new claim made, the owners recorded), before the
// Deployment is stopped; the next apply copies what changed since, stops it and finishes.
func TestAccVolumeMigration_resumeAfterCopy(t *testing.T) {
	testResume(t, volumemigration.RunKilledAfterCopy, killedAt{running: true, claim: true})
}

// TestAccVolumeMigration_resumeAfterScaleDown: a run stops as a killed provider would, right
// after it scaled the Deployment down and recorded that on the claim (its first copy done, the
// new claim made); the next apply resumes from the record: it copies the delta, verifies, swaps
// and scales the Deployment back, and nothing is lost.
func TestAccVolumeMigration_resumeAfterScaleDown(t *testing.T) {
	testResume(t, volumemigration.RunKilledAfterScaleDown, killedAt{claim: true})
}

// TestAccVolumeMigration_resumeAfterClaimDeleted: a run stops as a killed provider would in the
// middle of the swap: the claim is deleted, not made again yet. The plan of the next apply
// passes although the claim does not exist (the record on the new volume says why), and the
// apply makes the claim again on the new volume and starts the Deployment: nothing is lost.
func TestAccVolumeMigration_resumeAfterClaimDeleted(t *testing.T) {
	acctest.RunsUnder(t, acctest.EveryCLI)
	testResume(t, volumemigration.RunKilledAfterClaimDeleted, killedAt{})
}

// TestAccVolumeMigration_resumeBeforeStart: a run stops as a killed provider would once the
// claim is made again on the new volume, before the Deployment is started; the next apply starts
// it and finishes.
func TestAccVolumeMigration_resumeBeforeStart(t *testing.T) {
	testResume(t, volumemigration.RunKilledBeforeStart, killedAt{claim: true, onTarget: true})
}

// killedAt is what a killed run left: the Deployment still running (else stopped), the claim
// there (else deleted), bound to the new volume (else to the source).
type killedAt struct{ running, claim, onTarget bool }

// testResume runs a migration that kill stops, checks that it left what want says, then applies
// the configuration and checks the migration.
func testResume(t *testing.T, kill func(context.Context, *volumemigration.Migrator) error, want killedAt) {
	f := newFixture(t)
	src := f.volume(t, acctest.RandomName("migration-src"), f.source)
	dst := f.volume(t, acctest.RandomName("migration-dst"), f.target)
	f.claim(t, "data", src)
	f.writer(t, src)
	name := "clusterstorage_volume_migration.test"

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{{
			PreConfig: func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				defer cancel()
				m := &volumemigration.Migrator{Client: f.client, Spec: volumemigration.Spec{
					Namespace: f.ns, Claim: "data", StorageClass: f.target, Image: acctest.RsyncImage, PullPolicy: "Never",
				}, Log: func(msg string, fields map[string]any) { t.Logf("killed run: %s %v", msg, fields) }}
				if err := kill(ctx, m); err != volumemigration.ErrKilled {
					t.Fatalf("the killed run returned %v", err)
				}
				d, err := f.client.AppsV1().Deployments(f.ns).Get(ctx, "writer", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if replicas := *d.Spec.Replicas; (replicas == 1) != want.running {
					t.Fatalf("after the killed run the writer has %d replicas; want it running: %t", replicas, want.running)
				}
				c, err := f.client.CoreV1().PersistentVolumeClaims(f.ns).Get(ctx, "data", metav1.GetOptions{})
				switch {
				case want.claim && err != nil:
					t.Fatal(err)
				case want.claim:
					t.Logf("recorded on the claim (volume %s): %s", c.Spec.VolumeName, c.Annotations[volumemigration.AnnotationProgress])
					if onTarget := c.Spec.VolumeName == filepath.Base(dst); onTarget != want.onTarget {
						t.Fatalf("after the killed run the claim is on volume %s; want it on the new volume: %t", c.Spec.VolumeName, want.onTarget)
					}
				case !kube.IsNotFound(err):
					t.Fatalf("after the killed run the claim is there (%v), want it deleted", err)
				}
			},
			Config: f.config("data", f.target),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(name, tfjsonpath.New("source_volume"), knownvalue.StringExact(filepath.Base(src))),
				statecheck.ExpectKnownValue(name, tfjsonpath.New("volume"), knownvalue.StringExact(filepath.Base(dst))),
			},
			Check: func(*terraform.State) error {
				return f.checkMigrated(t, src, dst, filepath.Base(src), filepath.Base(dst))
			},
		}},
	})
}

// TestAccVolumeMigration_rollback: a ReadWriteOncePod claim (no copy while the workload runs: it
// is stopped first) moved with a copy image the node does not have: the copy pod cannot start,
// the apply fails saying so, and everything is put back: the writer runs again at its replica
// count, on its claim, on the source volume, no record on the claim, no temporary claim left.
func TestAccVolumeMigration_rollback(t *testing.T) {
	f := newFixture(t)
	src := f.volumeWith(t, acctest.RandomName("migration-src"), f.source, corev1.ReadWriteOncePod)
	f.volumeWith(t, acctest.RandomName("migration-dst"), f.target, corev1.ReadWriteOncePod)
	f.claimWith(t, "data", src, corev1.ReadWriteOncePod)
	f.writer(t, src)
	config := strings.Replace(f.config("data", f.target), acctest.RsyncImage, "localhost/clusterstorage/no-such-image:1", 1)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{{
			Config:      config,
			ExpectError: acctest.ErrorRegexp(`the copy container cannot start: ErrImageNeverPull.* Rolled back.* Checked afterwards: claim \S+ \(the same claim\) is bound to its volume`),
		}},
	})
	f.checkRolledBack(t, src)
}

// TestAccVolumeMigration_verifyMismatch: something outside the workload keeps writing to the
// source volume after the scale-down (a process on the node, here the test itself): the
// verification finds the copy differs, the one repair pass it allows does not help, and the
// apply fails naming the file; everything is put back as for any failure before the swap.
func TestAccVolumeMigration_verifyMismatch(t *testing.T) {
	f := newFixture(t)
	src := f.volume(t, acctest.RandomName("migration-src"), f.source)
	f.volume(t, acctest.RandomName("migration-dst"), f.target)
	f.claim(t, "data", src)
	f.writer(t, src)
	stray, err := os.OpenFile(filepath.Join(src, "stray.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
				_, _ = fmt.Fprintf(stray, "line %d\n", i)
			}
		}
	}()
	t.Cleanup(func() {
		close(stop)
		<-stopped
		_ = stray.Close() //nolint:errcheck // only written
	})
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{{
			Config:      f.config("data", f.target),
			ExpectError: acctest.ErrorRegexp(`verifying the copy failed: [0-9]+ entries differ from the source after the copy \(rsync --checksum\): \S+ stray\.log.* Rolled back.* Checked afterwards: claim \S+ \(the same claim\) is bound to its volume`),
		}},
	})
	f.checkRolledBack(t, src)
}

// checkRolledBack checks what a migration that failed before its swap left: the claim "data" on
// its source volume (directory src) without the migration's record, no other claim, the writer
// at one replica and writing there again.
func (f *fixture) checkRolledBack(t *testing.T, src string) {
	t.Helper()
	ctx := context.Background()
	c, err := f.client.CoreV1().PersistentVolumeClaims(f.ns).Get(ctx, "data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Spec.VolumeName != filepath.Base(src) || *c.Spec.StorageClassName != f.source {
		t.Errorf("after the rollback the claim is on %s (class %s)", c.Spec.VolumeName, *c.Spec.StorageClassName)
	}
	if v, ok := c.Annotations[volumemigration.AnnotationProgress]; ok {
		t.Errorf("the rollback left the record on the claim: %s", v)
	}
	claims, err := f.client.CoreV1().PersistentVolumeClaims(f.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(claims.Items) != 1 {
		t.Errorf("%d claims after the rollback, want only the writer's", len(claims.Items))
	}
	d, err := f.client.AppsV1().Deployments(f.ns).Get(ctx, "writer", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != 1 {
		t.Errorf("after the rollback the writer asks for %d replicas, want 1", *d.Spec.Replicas)
	}
	before, err := os.ReadFile(filepath.Join(src, "records"))
	if err != nil {
		t.Fatal(err)
	}
	f.waitRecords(t, src, bytes.Count(before, []byte("\n"))+10) // it writes again
}

// TestAccVolumeMigration_statefulSet: a StatefulSet of 2 writing records, each replica on a
// claim of its volumeClaimTemplates, migrated with a count over clusterstorage_volumes (users
// write for_each, as the docs' example does; terraform-plugin-testing cannot read the state of
// for_each instances, whose keys are strings, even to destroy them after the test): both
// migrations run at once and share the StatefulSet's stop (the last one starts it again at 2);
// every record of each source is on its new volume; the next plan has nothing to do, the data
// source still listing the claims it moved (include_migrated).
func TestAccVolumeMigration_statefulSet(t *testing.T) {
	f := newFixture(t)
	var srcDirs []string
	for range 2 {
		srcDirs = append(srcDirs, f.volume(t, acctest.RandomName("migration-src"), f.source))
		f.volume(t, acctest.RandomName("migration-dst"), f.target)
	}
	two := int32(2)
	labels := map[string]string{"app": "db"}
	class := f.source
	spec := acctest.PodOnClaim("unused", acctest.WriterScript)
	spec.Volumes = nil
	_, err := f.client.AppsV1().StatefulSets(f.ns).Create(context.Background(), &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: f.ns},
		Spec: appsv1.StatefulSetSpec{
			Replicas: &two, Selector: &metav1.LabelSelector{MatchLabels: labels}, ServiceName: "db",
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Template:            corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data", Labels: labels},
				Spec: corev1.PersistentVolumeClaimSpec{
					StorageClassName: &class,
					AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: k8sresource.MustParse("64Mi")}},
				},
			}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range srcDirs {
		f.waitRecords(t, dir, 20)
	}
	config := acctest.ProviderConfig() + fmt.Sprintf(`
data "clusterstorage_volumes" "db" {
  namespace        = %q
  storage_class    = %q
  label_selector   = "app=db"
  include_migrated = true
}

resource "clusterstorage_volume_migration" "db" {
  count = length(data.clusterstorage_volumes.db.volumes)

  namespace         = data.clusterstorage_volumes.db.volumes[count.index].namespace
  claim             = data.clusterstorage_volumes.db.volumes[count.index].name
  storage_class     = %q
  image             = %q
  image_pull_policy = "Never"
  restore_on_destroy = true
}

output "migrated" {
  value = { for m in clusterstorage_volume_migration.db : m.id => m.migrated_at }
}
`, f.ns, f.source, f.target, acctest.RsyncImage)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownOutputValue("migrated", knownvalue.MapExact(map[string]knownvalue.Check{
						f.ns + "/data-db-0": knownvalue.NotNull(),
						f.ns + "/data-db-1": knownvalue.NotNull(),
					})),
					clusterCheck(func() error {
						ctx := context.Background()
						for _, dir := range srcDirs {
							pv, err := f.client.CoreV1().PersistentVolumes().Get(ctx, filepath.Base(dir), metav1.GetOptions{})
							if err != nil {
								return err
							}
							// "<namespace>/<claim> <new volume>"
							to := strings.Fields(pv.Annotations[volumemigration.AnnotationMigratedTo])
							if len(to) != 2 {
								return fmt.Errorf("source volume %s: annotation %s is %q", pv.Name, volumemigration.AnnotationMigratedTo, pv.Annotations[volumemigration.AnnotationMigratedTo])
							}
							records, err := acctest.CheckRecordsMoved(os.ReadFile, dir, filepath.Join(f.base, to[1]))
							if err != nil {
								return fmt.Errorf("%s: %w", to[0], err)
							}
							t.Logf("%s: %d records moved", to[0], records)
						}
						s, err := f.client.AppsV1().StatefulSets(f.ns).Get(ctx, "db", metav1.GetOptions{})
						if err != nil {
							return err
						}
						if *s.Spec.Replicas != 2 || s.Status.ReadyReplicas != 2 {
							return fmt.Errorf("the StatefulSet asks for %d replicas, %d Ready; want 2", *s.Spec.Replicas, s.Status.ReadyReplicas)
						}
						if v, ok := s.Annotations[volumemigration.AnnotationStopped]; ok {
							return fmt.Errorf("the StatefulSet still carries the stop record: %s", v)
						}
						return nil
					}),
				},
			},
			{Config: config, PlanOnly: true},
		},
		CheckDestroy: func(*terraform.State) error { return f.checkStatefulSetRestored(t) },
	})
}

// checkStatefulSetRestored checks what the destroy of TestAccVolumeMigration_statefulSet's
// migrations (restore_on_destroy, both at once, sharing the StatefulSet's stop) left: each claim
// back on its source volume, which holds every record its migrated volume held at the stop; the
// StatefulSet at 2 replicas, Ready, without the stop record.
func (f *fixture) checkStatefulSetRestored(t *testing.T) error {
	ctx := context.Background()
	pvs, err := f.client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	restored := 0
	for _, left := range pvs.Items {
		if left.Spec.StorageClassName != f.target {
			continue
		}
		// The volume each claim left: "<namespace>/<claim> <source volume>".
		to := strings.Fields(left.Annotations[volumemigration.AnnotationMigratedTo])
		if len(to) != 2 {
			return fmt.Errorf("volume %s: annotation %s is %q", left.Name, volumemigration.AnnotationMigratedTo, left.Annotations[volumemigration.AnnotationMigratedTo])
		}
		claim := strings.TrimPrefix(to[0], f.ns+"/")
		c, err := f.client.CoreV1().PersistentVolumeClaims(f.ns).Get(ctx, claim, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if c.Spec.VolumeName != to[1] || c.Status.Phase != corev1.ClaimBound {
			return fmt.Errorf("claim %s: volume %q (%s), want %s", claim, c.Spec.VolumeName, c.Status.Phase, to[1])
		}
		records, err := acctest.CheckRecordsMoved(os.ReadFile, filepath.Join(f.base, left.Name), filepath.Join(f.base, to[1]))
		if err != nil {
			return fmt.Errorf("%s, moved back: %w", claim, err)
		}
		t.Logf("%s: %d records moved back", claim, records)
		restored++
	}
	if restored != 2 {
		return fmt.Errorf("%d claims moved back, want 2", restored)
	}
	return kube.Poll(ctx, 250*time.Millisecond, time.Minute, "the StatefulSet to be Ready at 2", func(ctx context.Context) (bool, string, error) {
		s, err := f.client.AppsV1().StatefulSets(f.ns).Get(ctx, "db", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		if v, ok := s.Annotations[volumemigration.AnnotationStopped]; ok {
			return false, "", fmt.Errorf("the StatefulSet still carries the stop record: %s", v)
		}
		return *s.Spec.Replicas == 2 && s.Status.ReadyReplicas == 2, fmt.Sprintf("%d replicas, %d Ready", *s.Spec.Replicas, s.Status.ReadyReplicas), nil
	})
}

// clusterCheck is a state check that checks the cluster.
type clusterCheck func() error

func (c clusterCheck) CheckState(_ context.Context, _ statecheck.CheckStateRequest, resp *statecheck.CheckStateResponse) {
	resp.Error = c()
}
