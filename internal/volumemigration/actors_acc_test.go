package volumemigration_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest/benchtest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/volumemigration"
)

// TestAccVolumeMigration_statefulSetDeletesClaims: a StatefulSet whose claim retention policy
// deletes its claims when it is scaled down (and when it is deleted), its claim made by a real
// dynamic provisioner that deletes the data of a released volume (rancher's local-path, as k3s
// ships it), writing records. A run is killed right after it scaled the StatefulSet to zero: the
// StatefulSet controller (the cluster's real kube-controller-manager) has deleted the pod, and
// the claim is still there, not owned by the pod, its volume Retain, the StatefulSet's policy
// Retain with the one it had recorded. The next apply finishes: every record on the new volume,
// the StatefulSet back at its replica count and its own policy, the source volume kept with the
// data. (Before the retention policy was handled, the scale-down deleted the claim and the
// provisioner deleted the source directory with every record.)
func TestAccVolumeMigration_statefulSetDeletesClaims(t *testing.T) {
	f := newFixture(t)
	env := &benchtest.Env{T: t, Client: f.client, Node: f.node, NS: f.ns}
	env.NeedLocalPath()
	ctx := context.Background()
	// The source volume is of the provisioner's class, which the fixture's cleanup does not
	// know: its object goes here, before the provisioner (its data is in the test's temp dir).
	t.Cleanup(func() { deleteVolumesOf(t, f, benchtest.LocalPathClass) })
	dst := f.volume(t, acctest.RandomName("migration-dst"), f.target)

	one := int32(1)
	labels := map[string]string{"app": "db"}
	class := benchtest.LocalPathClass
	spec := acctest.PodOnClaim("unused", acctest.WriterScript)
	spec.Volumes = nil
	// On this machine's node, where the test reads the volumes' directories (the scheduler
	// places it: a WaitForFirstConsumer claim is provisioned where it does).
	spec.NodeSelector = map[string]string{"kubernetes.io/hostname": f.hostname}
	policy := &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType,
		WhenScaled:  appsv1.DeletePersistentVolumeClaimRetentionPolicyType,
	}
	_, err := f.client.AppsV1().StatefulSets(f.ns).Create(ctx, &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: f.ns},
		Spec: appsv1.StatefulSetSpec{
			Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels}, ServiceName: "db",
			PersistentVolumeClaimRetentionPolicy: policy,
			Template:                             corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
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
	const claim = "data-db-0"
	var srcPV string
	err = kube.Poll(ctx, 250*time.Millisecond, 2*time.Minute, "claim "+claim+" to be bound", func(ctx context.Context) (bool, string, error) {
		c, err := f.client.CoreV1().PersistentVolumeClaims(f.ns).Get(ctx, claim, metav1.GetOptions{})
		if err != nil {
			return kube.KeepPolling(err)
		}
		srcPV = c.Spec.VolumeName
		return c.Status.Phase == corev1.ClaimBound, string(c.Status.Phase), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	pv, err := f.client.CoreV1().PersistentVolumes().Get(ctx, srcPV, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
		t.Fatalf("the provisioner's volume has reclaim policy %s; the test needs one that deletes its data", pv.Spec.PersistentVolumeReclaimPolicy)
	}
	src := volumeDir(pv)
	if src == "" {
		t.Fatalf("volume %s is neither hostPath nor local: %+v", srcPV, pv.Spec.PersistentVolumeSource)
	}
	f.waitRecords(t, src, 20)

	config := acctest.ProviderConfig() + fmt.Sprintf(`
resource "clusterstorage_volume_migration" "db" {
  namespace         = %q
  claim             = %q
  storage_class     = %q
  image             = %q
  image_pull_policy = "Never"
}
`, f.ns, claim, f.target, acctest.RsyncImage)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{{
			PreConfig: func() {
				ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
				defer cancel()
				m := &volumemigration.Migrator{Client: f.client, Spec: volumemigration.Spec{
					Namespace: f.ns, Claim: claim, StorageClass: f.target, Image: acctest.RsyncImage, PullPolicy: "Never",
				}, Log: func(msg string, fields map[string]any) { t.Logf("killed run: %s %v", msg, fields) }}
				if err := volumemigration.RunKilledAfterScaleDown(ctx, m); err != volumemigration.ErrKilled {
					t.Fatalf("the killed run returned %v", err)
				}
				f.checkClaimsKept(ctx, t, claim, srcPV)
			},
			Config: config,
			Check: func(*terraform.State) error {
				records, err := acctest.CheckRecordsMoved(os.ReadFile, src, filepath.Join(f.base, filepath.Base(dst)))
				if err != nil {
					return err
				}
				t.Logf("%d records moved", records)
				s, err := f.client.AppsV1().StatefulSets(f.ns).Get(ctx, "db", metav1.GetOptions{})
				if err != nil {
					return err
				}
				if p := s.Spec.PersistentVolumeClaimRetentionPolicy; p == nil || *p != *policy {
					return fmt.Errorf("the StatefulSet's claim retention policy is %+v, want its own back: %+v", p, policy)
				}
				if _, ok := s.Annotations[volumemigration.AnnotationStopped]; ok || *s.Spec.Replicas != 1 {
					return fmt.Errorf("the StatefulSet asks for %d replicas, annotations %v", *s.Spec.Replicas, s.Annotations)
				}
				kept, err := f.client.CoreV1().PersistentVolumes().Get(ctx, srcPV, metav1.GetOptions{})
				if err != nil {
					return fmt.Errorf("the source volume is gone: %w", err)
				}
				if kept.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain {
					return fmt.Errorf("the kept source volume has reclaim policy %s", kept.Spec.PersistentVolumeReclaimPolicy)
				}
				return nil
			},
		}},
	})
}

// checkClaimsKept checks what a run killed right after the scale-down of the StatefulSet "db"
// left: its pod gone, the claim there and owned by no pod, its volume Retain, the StatefulSet's
// policy Retain with the one it had recorded on it.
func (f *fixture) checkClaimsKept(ctx context.Context, t *testing.T, claim, pv string) {
	t.Helper()
	err := kube.Poll(ctx, 250*time.Millisecond, time.Minute, "the StatefulSet's pod to be deleted", func(ctx context.Context) (bool, string, error) {
		_, err := f.client.CoreV1().Pods(f.ns).Get(ctx, "db-0", metav1.GetOptions{})
		return kube.IsNotFound(err), "it still exists", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// With whenScaled: Delete the controller makes the condemned pod the claim's owner before it
	// deletes the pod, and the garbage collector deletes the claim after it.
	c, err := f.client.CoreV1().PersistentVolumeClaims(f.ns).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the scale-down deleted the claim: %v", err)
	}
	for _, o := range c.OwnerReferences {
		if o.Kind == "Pod" {
			t.Fatalf("the claim is owned by pod %s: the garbage collector deletes it with the pod", o.Name)
		}
	}
	v, err := f.client.CoreV1().PersistentVolumes().Get(ctx, pv, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain || v.Annotations[volumemigration.AnnotationReclaimPolicy] != "Delete" {
		t.Fatalf("the source volume has reclaim policy %s, annotations %v", v.Spec.PersistentVolumeReclaimPolicy, v.Annotations)
	}
	s, err := f.client.AppsV1().StatefulSets(f.ns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := s.Spec.PersistentVolumeClaimRetentionPolicy
	if p == nil || p.WhenScaled != appsv1.RetainPersistentVolumeClaimRetentionPolicyType || p.WhenDeleted != appsv1.RetainPersistentVolumeClaimRetentionPolicyType ||
		!strings.Contains(s.Annotations[volumemigration.AnnotationStopped], `"retention":{"whenDeleted":"Delete","whenScaled":"Delete"}`) {
		t.Fatalf("the stopped StatefulSet: policy %+v, stop record %s", p, s.Annotations[volumemigration.AnnotationStopped])
	}
}

// TestAccVolumeMigration_scaledBack: the Deployment carries Argo CD's tracking annotation, and
// the test plays its self-heal: whenever the Deployment asks for fewer than one replica it sets
// one again, as field manager argocd-controller. The plan refuses until controllers_paused is
// set; with it (the user said so, and was wrong), the apply notices the Deployment was scaled back
// while it waited for the pods to stop, fails naming it and the manager, and rolls back: the
// claim on its source volume, the writer running there, nothing left of the migration.
func TestAccVolumeMigration_scaledBack(t *testing.T) {
	f := newFixture(t)
	src := f.volume(t, acctest.RandomName("migration-src"), f.source)
	f.volume(t, acctest.RandomName("migration-dst"), f.target)
	f.claim(t, "data", src)
	f.writer(t, src)
	ctx := context.Background()
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{"argocd.argoproj.io/tracking-id":"shop:apps/Deployment:%s/writer"}}}`, f.ns)
	if _, err := f.client.AppsV1().Deployments(f.ns).Patch(ctx, "writer", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	selfHeal(t, f, "writer")
	paused := strings.Replace(f.config("data", f.target), `image_pull_policy = "Never"`, "image_pull_policy = \"Never\"\n  controllers_paused = true", 1)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:      f.config("data", f.target),
				ExpectError: acctest.ErrorRegexp(`is mounted by a workload another controller starts.*Argo CD application shop \(on Deployment/writer\).*controllers_paused = true`),
			},
			{
				Config:      paused,
				ExpectError: acctest.ErrorRegexp(`something else acted on the workload.*Deployment writer asks for 1 replicas again \(set by argocd-controller\).*Rolled back.*Checked afterwards: claim \S+ \(the same claim\) is bound to its volume`),
			},
		},
	})
	f.checkRolledBack(t, src)
}

// selfHeal plays a GitOps controller's self-heal on Deployment name until the test ends: every
// 200 ms, a Deployment scaled below one replica is set to one, as field manager argocd-controller.
func selfHeal(t *testing.T, f *fixture, name string) {
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			d, err := f.client.AppsV1().Deployments(f.ns).Get(context.Background(), name, metav1.GetOptions{})
			if err != nil || d.Spec.Replicas == nil || *d.Spec.Replicas >= 1 {
				continue
			}
			one := int32(1)
			d.Spec.Replicas = &one
			_, _ = f.client.AppsV1().Deployments(f.ns).Update(context.Background(), d, metav1.UpdateOptions{FieldManager: "argocd-controller"}) //nolint:errcheck // retried at the next tick
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
}

// TestAccVolumeMigration_podBeforeSwap: a run is killed once the copy is verified and the swap
// recorded; then a pod no controller owns mounts the source claim (a user's debug pod, a job)
// and writes to it. The next apply checks, right before it would delete the claim, that nothing
// mounts it: it finds the pod, fails naming it, and rolls back instead of swapping onto a copy
// without the pod's writes: the claim on its source volume with the pod's file, the writer
// running again, the new volume cleared of the migration's records.
func TestAccVolumeMigration_podBeforeSwap(t *testing.T) {
	testBeforeSwap(t, func(ctx context.Context, f *fixture) {
		_, err := f.client.CoreV1().Pods(f.ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "late", Namespace: f.ns},
			Spec:       acctest.PodOnClaim("data", "echo written-after-the-verification > /data/late; sleep 3600"),
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}, `pod late mounts claim \S+ \(no controller: a bare pod\)`)
}

// TestAccVolumeMigration_scaledBackBeforeSwap: as podBeforeSwap, but what comes back after the
// verification is the workload itself, scaled up by a GitOps controller (Flux's
// kustomize-controller here) that wrote a late file: the next apply names the Deployment and the
// controller, and rolls back.
func TestAccVolumeMigration_scaledBackBeforeSwap(t *testing.T) {
	testBeforeSwap(t, func(ctx context.Context, f *fixture) {
		d, err := f.client.AppsV1().Deployments(f.ns).Get(ctx, "writer", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		one := int32(1)
		d.Spec.Replicas = &one
		d.Spec.Template.Spec.Containers[0].Command = []string{"sh", "-c", "echo written-after-the-verification > /data/late; " + acctest.WriterScript}
		if _, err := f.client.AppsV1().Deployments(f.ns).Update(ctx, d, metav1.UpdateOptions{FieldManager: "kustomize-controller"}); err != nil {
			t.Fatal(err)
		}
	}, `Deployment writer asks for 1 replicas again \(set by kustomize-controller\)`)
}

// testBeforeSwap kills a run once the copy is verified and the swap recorded, lets come back
// something that writes the file "late" to the source volume, and applies: the apply must fail
// with want and roll back, the late file on the source volume.
func testBeforeSwap(t *testing.T, comeBack func(context.Context, *fixture), want string) {
	f := newFixture(t)
	src := f.volume(t, acctest.RandomName("migration-src"), f.source)
	dst := f.volume(t, acctest.RandomName("migration-dst"), f.target)
	f.claim(t, "data", src)
	f.writer(t, src)
	ctx := context.Background()
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{{
			PreConfig: func() {
				ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
				defer cancel()
				m := &volumemigration.Migrator{Client: f.client, Spec: volumemigration.Spec{
					Namespace: f.ns, Claim: "data", StorageClass: f.target, Image: acctest.RsyncImage, PullPolicy: "Never",
				}, Log: func(msg string, fields map[string]any) { t.Logf("killed run: %s %v", msg, fields) }}
				if err := volumemigration.RunKilledAtSwap(ctx, m); err != volumemigration.ErrKilled {
					t.Fatalf("the killed run returned %v", err)
				}
				comeBack(ctx, f)
				err := kube.Poll(ctx, 100*time.Millisecond, time.Minute, "the late pod to write", func(context.Context) (bool, string, error) {
					_, err := os.Stat(filepath.Join(src, "late"))
					return err == nil, "not yet", nil
				})
				if err != nil {
					t.Fatal(err)
				}
			},
			Config:      f.config("data", f.target),
			ExpectError: acctest.ErrorRegexp(want + `.*claim was not swapped.*Rolled back.*Checked afterwards: claim \S+ \(the same claim\) is bound to its volume`),
		}},
	})
	if err := f.client.CoreV1().Pods(f.ns).Delete(ctx, "late", metav1.DeleteOptions{}); err != nil && !kube.IsNotFound(err) {
		t.Fatal(err)
	}
	f.checkRolledBack(t, src)
	if _, err := os.Stat(filepath.Join(src, "late")); err != nil {
		t.Errorf("the late pod's file is not on the source volume: %v", err)
	}
	pv, err := f.client.CoreV1().PersistentVolumes().Get(ctx, filepath.Base(dst), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{volumemigration.AnnotationProgress, volumemigration.AnnotationClaim} {
		if v, ok := pv.Annotations[a]; ok {
			t.Errorf("the rollback left %s on the new volume: %s", a, v)
		}
	}
}

// volumeDir is the directory of a hostPath or local volume on its node, "" for another kind.
func volumeDir(pv *corev1.PersistentVolume) string {
	switch {
	case pv.Spec.HostPath != nil:
		return pv.Spec.HostPath.Path
	case pv.Spec.Local != nil:
		return pv.Spec.Local.Path
	}
	return ""
}

// deleteVolumesOf deletes the volumes of class whose claims were in the fixture's namespace.
func deleteVolumesOf(t *testing.T, f *fixture, class string) {
	ctx := context.Background()
	pvs, err := f.client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Error(err)
		return
	}
	for _, pv := range pvs.Items {
		if pv.Spec.StorageClassName != class || pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.Namespace != f.ns {
			continue
		}
		if err := f.client.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{}); err != nil && !kube.IsNotFound(err) {
			t.Errorf("deleting volume %s: %v", pv.Name, err)
		}
	}
}
