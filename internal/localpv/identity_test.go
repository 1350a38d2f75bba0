package localpv_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/querycheck"
	"github.com/hashicorp/terraform-plugin-testing/querycheck/queryfilter"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"
	corev1 "k8s.io/api/core/v1"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
)

// required names the provider's source: an import step's configuration is used as written, and
// OpenTofu would otherwise look for the provider in its own registry.
const required = `terraform {
  required_providers {
    clusterstorage = { source = "registry.terraform.io/hashicorp/clusterstorage" }
  }
}
`

// TestAccLocalPV_identity: a volume's resource identity is its name, set at create and kept by an
// update; an import block with that identity (Terraform 1.12+, OpenTofu 1.12+) imports it with no
// change, and an import block with the name as `id` still does.
func TestAccLocalPV_identity(t *testing.T) {
	acctest.RunsUnder(t, acctest.EveryCLI)
	f := newFixture(t)
	name := acctest.RandomName("acc-pv")
	dir := filepath.Join(f.root, "disks", "vol1")
	config := func(capacity string) string {
		return required + f.config(acctest.LoadConfig(t, "identity.tf", name, f.node, dir, capacity))
	}
	identity := statecheck.ExpectIdentity(addr, map[string]knownvalue.Check{"name": knownvalue.StringExact(name)})
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_12_0)},
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy:             f.checkDestroyed(name),
		Steps: []resource.TestStep{
			{
				Config: config("1Gi"),
				ConfigStateChecks: []statecheck.StateCheck{
					identity,
					statecheck.ExpectIdentityValueMatchesState(addr, tfjsonpath.New("name")),
				},
			},
			{
				Config: config("2Gi"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{identity},
			},
			{
				ResourceName:    addr,
				ImportState:     true,
				ImportStateKind: resource.ImportBlockWithResourceIdentity,
			},
			{
				ResourceName:    addr,
				ImportState:     true,
				ImportStateKind: resource.ImportBlockWithID,
			},
		},
	})
}

// handMadePV is a local volume as a user writes its manifest: pinned to node through
// kubernetes.io/hostname, its directory made by hand (mode 0750).
func (f *fixture) handMadePV(name, class, dir string, edit func(*corev1.PersistentVolume)) {
	f.t.Helper()
	if err := os.MkdirAll(dir, 0o750); err != nil {
		f.t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o750); err != nil {
		f.t.Fatal(err)
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
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{f.node}}},
			}}}},
		},
	}
	if edit != nil {
		edit(pv)
	}
	if _, err := f.client.CoreV1().PersistentVolumes().Create(context.Background(), pv, metav1.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() {
		_ = f.client.CoreV1().PersistentVolumes().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// TestAccLocalPV_list: `terraform query` (Terraform 1.14+) lists the local volumes of a class that
// clusterstorage_local_pv can adopt, made by hand: with their identities, display names and, with
// include_resource, what an import records (the directory's mode read on the node). A volume not
// pinned to a node, one a provisioner made for a claim, and one of another class are not listed;
// the node filter keeps the node's volumes.
func TestAccLocalPV_list(t *testing.T) {
	f := newFixture(t)
	class := acctest.RandomName("acc-local")
	pinned, labelled := acctest.RandomName("acc-pv-a"), acctest.RandomName("acc-pv-b")
	f.handMadePV(pinned, class, filepath.Join(f.root, "a"), nil)
	f.handMadePV(labelled, class, filepath.Join(f.root, "b"), func(pv *corev1.PersistentVolume) {
		pv.Labels = map[string]string{"tier": "nvme"}
		pv.Spec.MountOptions = []string{"noatime"}
	})
	f.handMadePV(acctest.RandomName("acc-pv-unpinned"), class, filepath.Join(f.root, "c"), func(pv *corev1.PersistentVolume) {
		pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0].Key = "topology.kubernetes.io/zone"
	})
	f.handMadePV(acctest.RandomName("acc-pv-provisioned"), class, filepath.Join(f.root, "d"), func(pv *corev1.PersistentVolume) {
		pv.Annotations = map[string]string{"pv.kubernetes.io/provisioned-by": "openebs.io/local"}
	})
	f.handMadePV(acctest.RandomName("acc-pv-other"), acctest.RandomName("acc-other"), filepath.Join(f.root, "e"), nil)
	list := "clusterstorage_local_pv.test"
	byName := func(name string) queryfilter.QueryFilter {
		return queryfilter.ByResourceIdentity(map[string]knownvalue.Check{"name": knownvalue.StringExact(name)})
	}
	query := func(node string) string {
		return fmt.Sprintf(`
list "clusterstorage_local_pv" "test" {
  provider         = clusterstorage
  include_resource = true
  config {
    storage_class_name = %q
    node               = %q
  }
}`, class, node)
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_14_0)},
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{
			{Config: f.config("")},
			{
				Query:  true,
				Config: query(f.node),
				QueryResultChecks: []querycheck.QueryResultCheck{
					querycheck.ExpectLength(list, 2),
					querycheck.ExpectIdentity(list, map[string]knownvalue.Check{"name": knownvalue.StringExact(pinned)}),
					querycheck.ExpectIdentity(list, map[string]knownvalue.Check{"name": knownvalue.StringExact(labelled)}),
					querycheck.ExpectResourceDisplayName(list, byName(pinned),
						knownvalue.StringExact(fmt.Sprintf("%s (%s:%s, 5Gi, class %s)", pinned, f.node, filepath.Join(f.root, "a"), class))),
					querycheck.ExpectResourceKnownValues(list, byName(pinned), []querycheck.KnownValueCheck{
						{Path: tfjsonpath.New("node"), KnownValue: knownvalue.StringExact(f.node)},
						{Path: tfjsonpath.New("path"), KnownValue: knownvalue.StringExact(filepath.Join(f.root, "a"))},
						{Path: tfjsonpath.New("capacity"), KnownValue: knownvalue.StringExact("5Gi")},
						{Path: tfjsonpath.New("storage_class_name"), KnownValue: knownvalue.StringExact(class)},
						{Path: tfjsonpath.New("reclaim_policy"), KnownValue: knownvalue.StringExact("Retain")},
						{Path: tfjsonpath.New("create_directory"), KnownValue: knownvalue.Bool(true)},
						{Path: tfjsonpath.New("directory_mode"), KnownValue: knownvalue.StringExact("0750")},
						{Path: tfjsonpath.New("directory_exists"), KnownValue: knownvalue.Bool(true)},
						{Path: tfjsonpath.New("labels"), KnownValue: knownvalue.Null()},
					}),
					querycheck.ExpectResourceKnownValues(list, byName(labelled), []querycheck.KnownValueCheck{
						{Path: tfjsonpath.New("labels"), KnownValue: knownvalue.MapExact(map[string]knownvalue.Check{"tier": knownvalue.StringExact("nvme")})},
						{Path: tfjsonpath.New("mount_options"), KnownValue: knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("noatime")})},
					}),
				},
			},
			{
				Query:             true,
				Config:            query("no-such-node"),
				QueryResultChecks: []querycheck.QueryResultCheck{querycheck.ExpectLength(list, 0)},
			},
		},
	})
}
