package storageclass_test

import (
	"context"
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
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

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

// TestAccStorageClass_identity: a class's resource identity is its name, set at create and kept by
// an update; an import block with that identity (Terraform 1.12+, OpenTofu 1.12+) imports it with
// no change, and an import block with the name as `id` still does.
func TestAccStorageClass_identity(t *testing.T) {
	acctest.RunsUnder(t, acctest.EveryCLI)
	name := acctest.RandomName("acc-sc")
	client := acctest.Kube(t)
	addr := "clusterstorage_storage_class.test"
	config := func(expansion bool) string {
		return required + acctest.ProviderConfig() + acctest.LoadConfig(t, "identity.tf", name, expansion)
	}
	identity := statecheck.ExpectIdentity(addr, map[string]knownvalue.Check{"name": knownvalue.StringExact(name)})
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_12_0)},
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy:             checkDestroyed(client, name),
		Steps: []resource.TestStep{
			{
				Config: config(false),
				ConfigStateChecks: []statecheck.StateCheck{
					identity,
					statecheck.ExpectIdentityValueMatchesState(addr, tfjsonpath.New("name")),
				},
			},
			{
				Config: config(true),
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

// TestAccStorageClass_list: `terraform query` (Terraform 1.14+) lists the classes of a
// provisioner, made outside Terraform, with their identities, display names and, with
// include_resource, what an import records (the default mark is not the class's own: another
// default exists in the cluster only if the test cluster has one, so default is not checked).
func TestAccStorageClass_list(t *testing.T) {
	client := acctest.Kube(t)
	ctx := context.Background()
	provisioner := "example.com/" + acctest.RandomName("acc-list")
	fast, slow, other := acctest.RandomName("acc-sc-fast"), acctest.RandomName("acc-sc-slow"), acctest.RandomName("acc-sc-other")
	retain := corev1.PersistentVolumeReclaimRetain
	wait := storagev1.VolumeBindingWaitForFirstConsumer
	for _, sc := range []*storagev1.StorageClass{
		{ObjectMeta: metav1.ObjectMeta{Name: fast, Labels: map[string]string{"tier": "fast"}}, Provisioner: provisioner,
			ReclaimPolicy: &retain, VolumeBindingMode: &wait, AllowVolumeExpansion: ptr.To(true), Parameters: map[string]string{"fsType": "xfs"}},
		{ObjectMeta: metav1.ObjectMeta{Name: slow}, Provisioner: provisioner, MountOptions: []string{"noatime"}},
		{ObjectMeta: metav1.ObjectMeta{Name: other}, Provisioner: "example.com/" + acctest.RandomName("acc-other")},
	} {
		if _, err := client.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = client.StorageV1().StorageClasses().Delete(context.Background(), sc.Name, metav1.DeleteOptions{})
		})
	}
	list := "clusterstorage_storage_class.test"
	byName := func(name string) queryfilter.QueryFilter {
		return queryfilter.ByResourceIdentity(map[string]knownvalue.Check{"name": knownvalue.StringExact(name)})
	}
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_14_0)},
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{
			{Config: acctest.ProviderConfig()},
			{
				Query:  true,
				Config: acctest.LoadConfig(t, "list.tf", provisioner),
				QueryResultChecks: []querycheck.QueryResultCheck{
					querycheck.ExpectLength(list, 2),
					querycheck.ExpectIdentity(list, map[string]knownvalue.Check{"name": knownvalue.StringExact(fast)}),
					querycheck.ExpectIdentity(list, map[string]knownvalue.Check{"name": knownvalue.StringExact(slow)}),
					querycheck.ExpectResourceDisplayName(list, byName(fast), knownvalue.StringExact(fast+" ("+provisioner+")")),
					querycheck.ExpectResourceKnownValues(list, byName(fast), []querycheck.KnownValueCheck{
						{Path: tfjsonpath.New("name"), KnownValue: knownvalue.StringExact(fast)},
						{Path: tfjsonpath.New("reclaim_policy"), KnownValue: knownvalue.StringExact("Retain")},
						{Path: tfjsonpath.New("volume_binding_mode"), KnownValue: knownvalue.StringExact("WaitForFirstConsumer")},
						{Path: tfjsonpath.New("allow_volume_expansion"), KnownValue: knownvalue.Bool(true)},
						{Path: tfjsonpath.New("parameters"), KnownValue: knownvalue.MapExact(map[string]knownvalue.Check{"fsType": knownvalue.StringExact("xfs")})},
						{Path: tfjsonpath.New("labels"), KnownValue: knownvalue.MapExact(map[string]knownvalue.Check{"tier": knownvalue.StringExact("fast")})},
						{Path: tfjsonpath.New("annotations"), KnownValue: knownvalue.Null()},
					}),
					querycheck.ExpectResourceKnownValues(list, byName(slow), []querycheck.KnownValueCheck{
						{Path: tfjsonpath.New("reclaim_policy"), KnownValue: knownvalue.StringExact("Delete")},
						{Path: tfjsonpath.New("mount_options"), KnownValue: knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("noatime")})},
						{Path: tfjsonpath.New("labels"), KnownValue: knownvalue.Null()},
					}),
				},
			},
		},
	})
}
