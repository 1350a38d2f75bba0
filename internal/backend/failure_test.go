package backend_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/helm"
)

// TestAccStorageBackend_neverReady: a workload that never becomes ready times the install out;
// the release is removed and nothing is recorded. A failing upgrade is rolled back and state
// keeps saying what runs.
func TestAccStorageBackend_neverReady(t *testing.T) {
	acctest.RunsUnder(t, acctest.FirstCLIOnly)
	f := newFixture(t)
	class := acctest.RandomName("acc-hostpath")
	typed := fmt.Sprintf("    hostpath_class_name = %q", class)
	neverReady := `set = [{ name = "fixture.neverReady", value = "true" }]`

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy:             f.checkReleaseGone("openebs"),
		Steps: []resource.TestStep{
			{
				Config:      f.openebs("4.4.0", typed, neverReady+"\n  timeouts = { create = \"15s\" }"),
				ExpectError: acctest.ErrorWords("The release was removed again (atomic install)."),
			},
			{
				PreConfig: func() {
					if _, err := f.release(); !errors.Is(err, helm.ErrNotFound) {
						t.Fatalf("the failed install left a release: %v", err)
					}
					if _, err := f.client.StorageV1().StorageClasses().Get(context.Background(), class, metav1.GetOptions{}); err == nil {
						t.Fatalf("the failed install left StorageClass %s", class)
					}
				},
				Config: f.openebs("4.4.0", typed, "  timeouts = { update = \"15s\" }"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("revision"), knownvalue.Int64Exact(1)),
				},
			},
			{
				Config:      f.openebs("4.4.0", typed, neverReady+"\n  timeouts = { update = \"15s\" }"),
				ExpectError: acctest.ErrorWords("The release is now revision 3 (deployed, chart 4.4.0): a failed upgrade is rolled back."),
			},
			{
				// State still describes what runs: the configuration before the failed upgrade.
				Config:   f.openebs("4.4.0", typed, "  timeouts = { update = \"15s\" }"),
				PlanOnly: true,
				Check:    f.checkAbsent("Deployment", "openebs-fixture-never-ready"),
			},
		},
	})
}

// TestAccStorageBackend_interrupted: releases of the provider left pending by an apply that was
// killed, longer ago than their timeout, are repaired by the next apply (with a warning): a
// pending install is removed and installed again, a pending upgrade rolled back and upgraded
// again.
func TestAccStorageBackend_interrupted(t *testing.T) {
	acctest.RunsUnder(t, acctest.EveryCLI)
	f := newFixture(t)
	class := acctest.RandomName("acc-hostpath")
	typed := fmt.Sprintf("    hostpath_class_name = %q", class)
	markLast := func(status rcommon.Status) {
		cfg := f.actionConfig()
		r, err := helm.AsRelease(cfg.Releases.Last("openebs"))
		if err != nil {
			t.Fatal(err)
		}
		r.SetStatus(status, "killed mid-apply (test)")
		// The interrupted operation started longer ago than its timeout: nothing can still run it.
		r.Info.LastDeployed = time.Now().Add(-time.Hour)
		if err := cfg.Releases.Update(r); err != nil {
			t.Fatal(err)
		}
		if status == rcommon.StatusPendingUpgrade {
			// Helm marks the previous revision superseded only when the upgrade succeeds.
			prev, err := helm.AsRelease(cfg.Releases.Get("openebs", r.Version-1))
			if err != nil {
				t.Fatal(err)
			}
			prev.SetStatus(rcommon.StatusDeployed, "deployed")
			if err := cfg.Releases.Update(prev); err != nil {
				t.Fatal(err)
			}
		}
	}

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy:             f.checkReleaseGone("openebs"),
		Steps: []resource.TestStep{
			{
				// An apply was killed while Helm installed: the release is pending-install and
				// Terraform recorded nothing.
				PreConfig: func() {
					rel := f.chart("openebs", "4.4.0")
					rel.CreateNamespace = true
					rel.Values = map[string]any{"loki": map[string]any{"enabled": false}, "alloy": map[string]any{"enabled": false},
						"engines":             map[string]any{"replicated": map[string]any{"mayastor": map[string]any{"enabled": false}}},
						"openebs-crds":        map[string]any{"csi": map[string]any{"volumeSnapshots": map[string]any{"enabled": false}}},
						"localpv-provisioner": map[string]any{"hostpathClass": map[string]any{"name": class}}}
					if _, err := f.owned.Install(context.Background(), *rel); err != nil {
						t.Fatal(err)
					}
					markLast(rcommon.StatusPendingInstall)
				},
				Config: f.openebs("4.4.0", typed, ""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("status"), knownvalue.StringExact("deployed")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("revision"), knownvalue.Int64Exact(1)),
				},
			},
			{
				Config: f.openebs("4.4.0", typed+"\n    lvm_enabled = true", ""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("revision"), knownvalue.Int64Exact(2)),
				},
			},
			{
				// An apply was killed while Helm upgraded: the plan shows the pending release,
				// and the apply rolls it back and upgrades again.
				PreConfig: func() { markLast(rcommon.StatusPendingUpgrade) },
				Config:    f.openebs("4.4.0", typed+"\n    lvm_enabled = true", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("status"), knownvalue.StringExact("deployed")),
					// 3 is the rollback to the deployed revision 1, 4 the upgrade.
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("revision"), knownvalue.Int64Exact(4)),
				},
				Check: f.checkDaemonSet("openebs-lvm-localpv-node"),
			},
		},
	})
}
