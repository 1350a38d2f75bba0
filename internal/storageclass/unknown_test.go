package storageclass_test

import (
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
)

// TestAccStorageClass_topologiesUnknownAtPlan: allowed_topologies built by a for over values
// computed during apply plan, and the apply writes them into the class.
func TestAccStorageClass_topologiesUnknownAtPlan(t *testing.T) {
	name := acctest.RandomName("acc-sc")
	client := acctest.Kube(t)
	config := acctest.ProviderConfig() + acctest.LoadConfig(t, "topologies_unknown_at_plan.tf", name)
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy:             checkDestroyed(client, name),
		Steps: []resource.TestStep{
			{Config: config, PlanOnly: true, ExpectNonEmptyPlan: true},
			{
				Config: config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("clusterstorage_storage_class.test", tfjsonpath.New("allowed_topologies").AtSliceIndex(1).
						AtMapKey("match_label_expressions").AtSliceIndex(0).AtMapKey("values"), knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("zone-b")})),
				},
				Check: checkClass(client, name, func(sc *storagev1.StorageClass) error {
					if len(sc.AllowedTopologies) != 2 || sc.AllowedTopologies[1].MatchLabelExpressions[0].Values[0] != "zone-b" {
						return fmt.Errorf("allowed topologies %+v, want zone-a and zone-b", sc.AllowedTopologies)
					}
					return nil
				}),
			},
		},
	})
}
