package localpv_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
)

// TestAccLocalPV_unknownAtPlan: node_affinity and the provider's nodes built by a for over values
// computed during apply plan without a value conversion error; what is known is still checked at
// plan, the rest at apply, and the apply uses both (the directory is made over SSH through the
// nodes entry, the volume carries the affinity).
func TestAccLocalPV_unknownAtPlan(t *testing.T) {
	f := newFixture(t)
	name := acctest.RandomName("acc-pv")
	dir := filepath.Join(f.root, "vol")
	config := func(affinity, extra string) string {
		return acctest.LoadConfig(t, "unknown_at_plan.tf", f.node, acctest.Kubeconfig(), f.sshd.User, f.sshd.ClientKeyPath, f.sshd.KnownHostsPath, f.sshd.Host, f.sshd.Port, name, dir, affinity, extra)
	}
	good := `{ key = "disktype", operator = "In", values = [v] }`
	addr := "clusterstorage_local_pv.test"
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy:             f.checkDestroyed(name),
		Steps: []resource.TestStep{
			{Config: config(good, ""), PlanOnly: true, ExpectNonEmptyPlan: true},
			{
				// What is known is checked at plan.
				Config: config(good, `volume_mode = "Block"`), PlanOnly: true,
				ExpectError: acctest.ErrorWords("With volume_mode = \"Block\", path is a block device"),
			},
			{
				// What was unknown is checked once known, before anything is made.
				Config:      config(`{ key = "disktype", operator = "Exists", values = [v] }`, ""),
				ExpectError: acctest.ErrorWords("Operator Exists takes no values"),
			},
			{
				Config: config(good, ""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("node_affinity").AtSliceIndex(0).AtMapKey("values").AtSliceIndex(0), knownvalue.StringExact("nvme")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("directory_exists"), knownvalue.Bool(true)),
				},
				Check: resource.ComposeTestCheckFunc(
					func(*terraform.State) error {
						_, err := os.Stat(dir)
						return err
					},
					f.checkPV(name, func(pv *corev1.PersistentVolume) error {
						for _, e := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions {
							if e.Key == "disktype" && e.Operator == corev1.NodeSelectorOpIn && len(e.Values) == 1 && e.Values[0] == "nvme" {
								return nil
							}
						}
						return fmt.Errorf("PV %s has no disktype In [nvme] requirement: %+v", name, pv.Spec.NodeAffinity)
					}),
				),
			},
		},
	})
}
