package localpv_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
)

// TestAccLocalPV_listGenerateConfig adopts a cluster's hand-made storage as a user does with
// Terraform 1.14+, through the real CLI and the provider built from this tree: two classes and
// three local volumes made with the Kubernetes API (one with an extra node-affinity term, labels
// and mount options, one of each class), a .tfquery.hcl listing them, `terraform query
// -generate-config-out=generated.tf`, then `terraform plan` shows five imports and no change,
// apply imports them, the next plan is empty, and nothing on the cluster changed (every object's
// resourceVersion is the same). OpenTofu has no list resources, nor Terraform before 1.14: the
// test is skipped under them.
func TestAccLocalPV_listGenerateConfig(t *testing.T) {
	acctest.RequireQuery(t) // before DevCLI builds the provider
	f := newFixture(t)
	cli, rc := acctest.DevCLI(t)
	ctx := context.Background()

	provisioner := "example.com/" + acctest.RandomName("acc-adopt")
	fast, slow := acctest.RandomName("acc-adopt-fast"), acctest.RandomName("acc-adopt-slow")
	retain, wffc := corev1.PersistentVolumeReclaimRetain, storagev1.VolumeBindingWaitForFirstConsumer
	for _, sc := range []*storagev1.StorageClass{
		{ObjectMeta: metav1.ObjectMeta{Name: fast, Labels: map[string]string{"tier": "fast"}, Annotations: map[string]string{"example.com/owner": "storage-team"}},
			Provisioner: provisioner, ReclaimPolicy: &retain, VolumeBindingMode: &wffc, MountOptions: []string{"noatime"},
			AllowedTopologies: []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: "kubernetes.io/hostname", Values: []string{f.node}}}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: slow}, Provisioner: provisioner, VolumeBindingMode: &wffc, Parameters: map[string]string{"tier": "hdd"}},
	} {
		if _, err := f.client.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = f.client.StorageV1().StorageClasses().Delete(context.Background(), sc.Name, metav1.DeleteOptions{})
		})
	}
	pvs := []string{acctest.RandomName("acc-adopt-pv"), acctest.RandomName("acc-adopt-pv"), acctest.RandomName("acc-adopt-pv")}
	f.handMadePV(pvs[0], fast, filepath.Join(f.root, "nvme", "vol1"), func(pv *corev1.PersistentVolume) {
		pv.Labels = map[string]string{"tier": "fast"}
		pv.Spec.MountOptions = []string{"noatime"}
		term := &pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0]
		term.MatchExpressions = append(term.MatchExpressions, corev1.NodeSelectorRequirement{Key: "kubernetes.io/os", Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}})
	})
	f.handMadePV(pvs[1], fast, filepath.Join(f.root, "nvme", "vol2"), nil)
	f.handMadePV(pvs[2], slow, filepath.Join(f.root, "hdd", "vol1"), func(pv *corev1.PersistentVolume) {
		pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimDelete
	})
	// The volumes settle (Available) before their versions are taken.
	for _, name := range pvs {
		acctest.WaitVolumeAvailable(t, f.client, name)
	}
	versions := func() map[string]string { return acctest.ResourceVersions(t, f.client, []string{fast, slow}, pvs) }
	before := versions()

	w := acctest.NewWorkspace(t, cli, rc, acctest.ProviderConfigSSH(f.sshd, f.node))
	w.WriteFile(t, "adopt.tfquery.hcl", acctest.AdoptQuery(t, provisioner, fast, f.node, slow))
	out := w.AdoptGenerated(t, map[string]int{
		`resource "clusterstorage_storage_class"`: 2, `resource "clusterstorage_local_pv"`: 3, "import {": 5, "identity = {": 5,
	}, 5)
	for _, name := range append([]string{fast, slow}, pvs...) {
		if !strings.Contains(out, name) {
			t.Errorf("terraform query does not show %s", name)
		}
	}
	if after := versions(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("the adoption changed objects on the cluster: resourceVersions %v, were %v", after, before)
	}
	// The test's cleanup removes the objects; the state goes with the workspace.
}
