package backend_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
)

// longhorn renders a Longhorn backend from the fixture repository. The class is never the
// cluster's default: other tests create claims without a class.
func (f *fixture) longhorn(version string, replicas int, locality string) string {
	return acctest.ProviderConfig() + fmt.Sprintf(`
resource "clusterstorage_storage_backend" "test" {
  type       = "longhorn"
  repository = %q
  version    = %q
  namespace  = %q
  longhorn = {
    default_replica_count = %d
    default_data_locality = %q
    default_class         = false
  }
}
`, f.repo, version, f.ns, replicas, locality)
}

// TestAccStorageBackend_longhorn installs Longhorn 1.8, changes the default class's (immutable)
// parameters in place, is refused a skip to 1.10 and a downgrade at plan (with the path to take),
// upgrades to 1.9 through the chart's pre-upgrade check, is refused destroy while a claim of its
// class exists, and is then destroyed through the chart's pre-delete hook, which only succeeds
// once the provider has set deleting-confirmation-flag.
func TestAccStorageBackend_longhorn(t *testing.T) {
	acctest.RunsUnder(t, acctest.FirstCLIOnly)
	f := newFixture(t, acctest.LockLonghorn)
	claim := "data"

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy:             f.checkReleaseGone("longhorn"),
		Steps: []resource.TestStep{
			{
				Config: f.longhorn("1.8.2", 1, "disabled"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("id"), knownvalue.StringExact(f.ns+"/longhorn")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("status"), knownvalue.StringExact("deployed")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("chart_version"), knownvalue.StringExact("1.8.2")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("app_version"), knownvalue.StringExact("v1.8.2")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("storage_classes"), knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("longhorn")})),
					// longhorn-manager (a DaemonSet: one per node) and two UI replicas.
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("footprint").AtMapKey("pods"), knownvalue.Int64Exact(2+f.nodeCount())),
				},
				Check: resource.ComposeTestCheckFunc(f.checkFootprint(), f.checkLonghornClass("1", "disabled"), f.checkLonghornDefaultSetting("default-replica-count: 1")),
			},
			{
				// Class parameters cannot be patched: the class is re-created after the upgrade.
				Config: f.longhorn("1.8.2", 2, "best-effort"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				Check: f.checkLonghornClass("2", "best-effort"),
			},
			{
				// Longhorn upgrades one minor at a time: refused at plan, with the path.
				Config:      f.longhorn("1.10.2", 2, "best-effort"),
				ExpectError: acctest.ErrorWords("Upgrade along 1.8.2 -> 1.9.2 -> 1.10.2, one apply per step"),
			},
			{
				Config:      f.longhorn("1.7.3", 2, "best-effort"),
				ExpectError: acctest.ErrorWords("downgrading to 1.7.3 is not supported"),
			},
			{
				Config: f.longhorn("1.9.2", 2, "best-effort"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("chart_version"), knownvalue.StringExact("1.9.2")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("revision"), knownvalue.Int64Exact(3)),
				},
				Check: f.checkLonghornClass("2", "best-effort"),
			},
			{
				ResourceName:            addr,
				ImportState:             true,
				ImportStateId:           f.ns + "/longhorn",
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"repository", "timeouts", volatileFootprint},
			},
			{
				// A claim of the backend's class blocks destroy, and says which.
				PreConfig:   func() { f.createClaim(claim, "longhorn") },
				Config:      f.longhorn("1.9.2", 2, "best-effort"),
				Destroy:     true,
				ExpectError: acctest.ErrorWords(fmt.Sprintf("PersistentVolumeClaim %s/%s (driver.longhorn.io, Pending, no volume yet): claim %s/%s, class longhorn", f.ns, claim, f.ns, claim)),
			},
			{
				// Still installed; once the claim is gone, the final destroy goes through the
				// deleting-confirmation-flag path.
				PreConfig: func() {
					if err := f.client.CoreV1().PersistentVolumeClaims(f.ns).Delete(context.Background(), claim, metav1.DeleteOptions{}); err != nil {
						t.Fatal(err)
					}
				},
				Config:   f.longhorn("1.9.2", 2, "best-effort"),
				PlanOnly: true,
				Check:    f.checkDaemonSet("longhorn-manager"),
			},
		},
	})
}

// TestAccStorageBackend_longhornVersions installs and destroys each of the newer Longhorn
// versions (1.10 and later quote every setting in longhorn-default-setting).
func TestAccStorageBackend_longhornVersions(t *testing.T) {
	acctest.RunsUnder(t, acctest.FirstCLIOnly)
	t.Parallel() // as foreignPendingRelease: each version holds the Longhorn lock in turn
	for version, quoted := range map[string]string{"1.9.2": "default-replica-count: 1", "1.10.2": `default-replica-count: "1"`, "1.12.1": `default-replica-count: "1"`} {
		t.Run(version, func(t *testing.T) {
			f := newFixture(t, acctest.LockLonghorn)
			resource.Test(t, resource.TestCase{
				PreCheck:                 func() { acctest.PreCheck(t) },
				ProtoV6ProviderFactories: acctest.ProviderFactories,
				CheckDestroy:             f.checkReleaseGone("longhorn"),
				Steps: []resource.TestStep{{
					Config: f.longhorn(version, 1, "best-effort"),
					ConfigStateChecks: []statecheck.StateCheck{
						statecheck.ExpectKnownValue(addr, tfjsonpath.New("chart_version"), knownvalue.StringExact(version)),
						statecheck.ExpectKnownValue(addr, tfjsonpath.New("status"), knownvalue.StringExact("deployed")),
					},
					Check: resource.ComposeTestCheckFunc(f.checkLonghornClass("1", "best-effort"), f.checkLonghornDefaultSetting(quoted)),
				}},
			})
		})
	}
}

// checkLonghornDefaultSetting: longhorn-default-setting (what longhorn-manager applies to its
// Setting objects) holds the line.
func (f *fixture) checkLonghornDefaultSetting(line string) func(*terraform.State) error {
	return func(*terraform.State) error {
		cm, err := f.client.CoreV1().ConfigMaps(f.ns).Get(context.Background(), "longhorn-default-setting", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got := cm.Data["default-setting.yaml"]; !strings.Contains(got, line) {
			return fmt.Errorf("longhorn-default-setting has %q, want a line %q", got, line)
		}
		return nil
	}
}

func (f *fixture) checkLonghornClass(replicas, locality string) func(*terraform.State) error {
	return func(*terraform.State) error {
		sc, err := f.client.StorageV1().StorageClasses().Get(context.Background(), "longhorn", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if sc.Parameters["numberOfReplicas"] != replicas || sc.Parameters["dataLocality"] != locality {
			return fmt.Errorf("class longhorn has parameters %v, want numberOfReplicas %s dataLocality %s", sc.Parameters, replicas, locality)
		}
		if sc.Annotations["storageclass.kubernetes.io/is-default-class"] != "false" {
			return fmt.Errorf("class longhorn is marked default: %v", sc.Annotations)
		}
		return nil
	}
}

func (f *fixture) createClaim(name, class string) {
	f.t.Helper()
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: &class,
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: k8sresource.MustParse("1Gi")}},
		},
	}
	if _, err := f.client.CoreV1().PersistentVolumeClaims(f.ns).Create(context.Background(), pvc, metav1.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}
