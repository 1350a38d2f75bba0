package backend_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

const addr = "clusterstorage_storage_backend.test"

// openebs renders an OpenEBS backend from the fixture repository; settings go inside the
// openebs block, extra at the resource's top level. The VolumeSnapshot CRDs (cluster-wide, kept
// on uninstall) stay off unless settings say otherwise (and the test holds
// acctest.LockSnapshotCRDs).
func (f *fixture) openebs(version, settings, extra string) string {
	if !strings.Contains(settings, "volume_snapshot_crds") {
		settings += "\n    volume_snapshot_crds = false"
	}
	return acctest.ProviderConfig() + fmt.Sprintf(`
resource "clusterstorage_storage_backend" "test" {
  type       = "openebs"
  repository = %q
  version    = %q
  namespace  = %q
  openebs = {
%s
  }
%s
}
`, f.repo, version, f.ns, settings, extra)
}

// TestAccStorageBackend_openebsLifecycle installs OpenEBS 4.0.1 with only hostpath, changes a
// typed setting, turns Mayastor on (on a labelled node, with one etcd replica for the one node),
// imports it, upgrades to 4.4.0 (skipping minors, which OpenEBS allows), is refused a downgrade
// at plan, is refused at plan to turn Mayastor off while a Mayastor volume exists (the update
// guard names it) and turns it off with force_strand_volumes.
func TestAccStorageBackend_openebsLifecycle(t *testing.T) {
	acctest.RunsUnder(t, acctest.EveryCLI)
	f := newFixture(t, acctest.LockMayastorNode)
	class := acctest.RandomName("acc-hostpath")
	base1, base2 := t.TempDir(), t.TempDir()
	mayastorPV := acctest.RandomName("acc-mayastor-pv")
	settings := func(base string, mayastor bool) string {
		return fmt.Sprintf("    hostpath_class_name = %q\n    hostpath_base_path = %q\n    mayastor_enabled = %t", class, base, mayastor)
	}
	oneEtcd := `  set = [{ name = "mayastor.etcd.replicaCount", value = "1" }]`
	mayastorClasses := knownvalue.SetExact([]knownvalue.Check{
		knownvalue.StringExact(class), knownvalue.StringExact("mayastor-etcd-localpv"), knownvalue.StringExact("openebs-single-replica"),
	})

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy:             f.checkReleaseGone("openebs"),
		Steps: []resource.TestStep{
			{
				Config: f.openebs("4.0.1", settings(base1, false), oneEtcd),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("id"), knownvalue.StringExact(f.ns+"/openebs")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("status"), knownvalue.StringExact("deployed")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("revision"), knownvalue.Int64Exact(1)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("chart_version"), knownvalue.StringExact("4.0.1")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("release_name"), knownvalue.StringExact("openebs")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("storage_classes"), knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact(class)})),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("footprint").AtMapKey("pods"), knownvalue.Int64Exact(1)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("force_strand_volumes"), knownvalue.Bool(false)),
				},
				Check: resource.ComposeTestCheckFunc(
					f.checkFootprint(),
					f.checkClassBasePath(class, base1),
					f.checkAbsent("DaemonSet", "openebs-io-engine"),
				),
			},
			{
				// A typed setting changes in place (helm upgrade); no volume lives under the old
				// base path, so the update guard lets it through.
				Config: f.openebs("4.0.1", settings(base2, false), oneEtcd),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("revision"), knownvalue.Int64Exact(2)),
				},
				Check: f.checkClassBasePath(class, base2),
			},
			{
				// Mayastor renders its io-engine (on the labelled node), its etcd with a claim on
				// its own class, and the class <release>-single-replica. 4.0.1's Loki (Mayastor's
				// loki-stack) is off.
				PreConfig: f.labelMayastorNodes,
				Config:    f.openebs("4.0.1", settings(base2, true), oneEtcd),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("storage_classes"), mayastorClasses),
					// The provisioner, etcd (one replica) and io-engine on every (labelled) node.
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("footprint").AtMapKey("pods"), knownvalue.Int64Exact(2+f.nodeCount())),
				},
				Check: resource.ComposeTestCheckFunc(
					f.checkDaemonSet("openebs-io-engine"), f.checkFootprint(), f.checkClaimBound("data-openebs-etcd-0"),
					f.checkAbsent("DaemonSet", "openebs-lvm-localpv-node"),
					f.checkAbsent("DaemonSet", "openebs-zfs-localpv-node"),
					f.checkAbsent("StatefulSet", "openebs-loki"),
				),
			},
			{
				ResourceName:      addr,
				ImportState:       true,
				ImportStateId:     f.ns + "/openebs",
				ImportStateVerify: true,
				// `set` is not read back: a release's values do not say which came from it.
				ImportStateVerifyIgnore: []string{"repository", "timeouts", "set", volatileFootprint},
			},
			{
				// 4.0.1 to 4.4.0 in one step (OpenEBS has no minor-at-a-time rule); 4.4 reads the
				// same engines.* conditions, and its Loki and Alloy subcharts stay off.
				Config: f.openebs("4.4.0", settings(base2, true), oneEtcd),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("chart_version"), knownvalue.StringExact("4.4.0")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("storage_classes"), mayastorClasses),
				},
				Check: resource.ComposeTestCheckFunc(
					f.checkDaemonSet("openebs-io-engine"),
					f.checkAbsent("StatefulSet", "openebs-loki"),
					f.checkAbsent("DaemonSet", "openebs-alloy"),
				),
			},
			{
				// No way back down: refused at plan.
				Config:      f.openebs("4.0.1", settings(base2, true), oneEtcd),
				PlanOnly:    true,
				ExpectError: acctest.ErrorWords("openebs chart 4.4.0 is installed: downgrading to 4.0.1 is not supported by openebs"),
			},
			{
				// A Mayastor volume exists: turning Mayastor off is refused at plan, naming it.
				// (Its etcd claim, the release's own, does not count.)
				PreConfig: func() {
					f.boundCSIVolume(mayastorPV, "mayastor-data", "openebs-single-replica", "io.openebs.csi-mayastor")
				},
				Config:   f.openebs("4.4.0", settings(base2, false), oneEtcd),
				PlanOnly: true,
				ExpectError: acctest.ErrorRegexp(regexp.QuoteMeta("would strand volumes") + ".*" +
					regexp.QuoteMeta("mayastor_enabled (engines.replicated.mayastor.enabled) turns from true to false (io.openebs.csi-mayastor)") + ".*" +
					regexp.QuoteMeta(fmt.Sprintf("PersistentVolume %s (io.openebs.csi-mayastor, Bound, reclaim Retain): claim %s/mayastor-data, class openebs-single-replica", mayastorPV, f.ns)) + ".*" +
					regexp.QuoteMeta("force_strand_volumes = true")),
			},
			{
				// With force_strand_volumes it goes ahead. Mayastor's etcd claim outlives the
				// StatefulSet, as with the real chart; the test deletes it and the stranded volume
				// before the destroy.
				Config: f.openebs("4.4.0", settings(base2, false), oneEtcd+"\n  force_strand_volumes = true"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("force_strand_volumes"), knownvalue.Bool(true)),
				},
				Check: resource.ComposeTestCheckFunc(
					f.checkAbsent("DaemonSet", "openebs-io-engine"),
					f.checkAbsent("StatefulSet", "openebs-etcd"),
					f.deleteClaim("data-openebs-etcd-0"),
					f.deleteVolume("mayastor-data", mayastorPV),
				),
			},
		},
	})
}

// TestAccStorageBackend_openebs40EnginesOff: settings a version cannot carry are refused at plan;
// and the seed article's one setting: OpenEBS 4.0.1 with
// every engine off deploys no Mayastor, LVM or ZFS object (its conditions are engines.*.enabled,
// which the provider writes), and an import reads the engines back as off.
func TestAccStorageBackend_openebs40EnginesOff(t *testing.T) {
	acctest.RunsUnder(t, acctest.FirstCLIOnly)
	f := newFixture(t)
	class := acctest.RandomName("acc-hostpath")
	config := f.openebs("4.0.1", fmt.Sprintf("    hostpath_class_name = %q", class), "")
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy:             f.checkReleaseGone("openebs"),
		Steps: []resource.TestStep{
			{
				// Before 4.4 there is no Alloy, and Loki only comes with Mayastor: refused at plan.
				Config:      f.openebs("4.1.3", fmt.Sprintf("    hostpath_class_name = %q\n    alloy_enabled = true", class), ""),
				PlanOnly:    true,
				ExpectError: acctest.ErrorWords("openebs charts 4.0.x to 4.2.x have no Alloy"),
			},
			{
				Config:      f.openebs("4.2.0", fmt.Sprintf("    hostpath_class_name = %q\n    loki_enabled = true", class), ""),
				PlanOnly:    true,
				ExpectError: acctest.ErrorWords("installs Loki only as part of Mayastor"),
			},
			{
				Config: config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("chart_version"), knownvalue.StringExact("4.0.1")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("storage_classes"), knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact(class)})),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("footprint").AtMapKey("pods"), knownvalue.Int64Exact(1)),
				},
				Check: resource.ComposeTestCheckFunc(
					f.checkAbsent("DaemonSet", "openebs-io-engine"),
					f.checkAbsent("StatefulSet", "openebs-etcd"),
					f.checkAbsent("DaemonSet", "openebs-lvm-localpv-node"),
					f.checkAbsent("DaemonSet", "openebs-zfs-localpv-node"),
					f.checkAbsent("StatefulSet", "openebs-loki"),
					f.checkNoClass("openebs-single-replica"),
					f.checkNoClass("mayastor-etcd-localpv"),
				),
			},
			{
				ResourceName:            addr,
				ImportState:             true,
				ImportStateId:           f.ns + "/openebs",
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"repository", "timeouts", volatileFootprint},
				ImportStateCheck: func(states []*terraform.InstanceState) error {
					for _, k := range []string{"openebs.mayastor_enabled", "openebs.lvm_enabled", "openebs.zfs_enabled", "openebs.volume_snapshot_crds"} {
						if v := states[0].Attributes[k]; v != "false" {
							return fmt.Errorf("imported %s = %q, want false", k, v)
						}
					}
					return nil
				},
			},
		},
	})
}

// deleteVolume deletes a claim of the test's namespace and its PersistentVolume (one the test
// made, which no provisioner deletes), and waits until both are gone.
func (f *fixture) deleteVolume(claim, pv string) func(*terraform.State) error {
	return func(*terraform.State) error {
		ctx := context.Background()
		if err := f.client.CoreV1().PersistentVolumeClaims(f.ns).Delete(ctx, claim, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		if err := f.client.CoreV1().PersistentVolumes().Delete(ctx, pv, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		return kube.Poll(ctx, 250*time.Millisecond, 2*time.Minute, "claim "+claim+" and volume "+pv+" to go", func(ctx context.Context) (bool, string, error) {
			if _, err := f.client.CoreV1().PersistentVolumeClaims(f.ns).Get(ctx, claim, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false, "claim still there", nil
			}
			if _, err := f.client.CoreV1().PersistentVolumes().Get(ctx, pv, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false, "volume still there", nil
			}
			return true, "", nil
		})
	}
}

func (f *fixture) checkNoClass(name string) func(*terraform.State) error {
	return func(*terraform.State) error {
		if _, err := f.client.StorageV1().StorageClasses().Get(context.Background(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("StorageClass %s: want not found, got %v", name, err)
		}
		return nil
	}
}

func (f *fixture) checkClaimBound(name string) func(*terraform.State) error {
	return func(*terraform.State) error {
		pvc, err := f.client.CoreV1().PersistentVolumeClaims(f.ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if pvc.Status.Phase != corev1.ClaimBound {
			return fmt.Errorf("claim %s/%s is %s, want Bound", f.ns, name, pvc.Status.Phase)
		}
		return nil
	}
}

// deleteClaim deletes a claim of the test's namespace and waits until its volume is gone too
// (reclaim Delete: the provisioner removes it), as a user does before a destroy the guard allows.
func (f *fixture) deleteClaim(name string) func(*terraform.State) error {
	return func(*terraform.State) error {
		ctx := context.Background()
		pvc, err := f.client.CoreV1().PersistentVolumeClaims(f.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := f.client.CoreV1().PersistentVolumeClaims(f.ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			return err
		}
		// The claim goes once no pod uses it (pvc-protection): a pod of a workload the apply removed
		// may take its grace period to end, longer on a loaded machine.
		return kube.Poll(ctx, 250*time.Millisecond, 5*time.Minute, "claim "+name+" and its volume "+pvc.Spec.VolumeName+" to go", func(ctx context.Context) (bool, string, error) {
			if _, err := f.client.CoreV1().PersistentVolumeClaims(f.ns).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false, "claim still there" + f.claimUsers(ctx, name), nil
			}
			pv, err := f.client.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, "", nil
			}
			if err != nil {
				return kube.KeepPolling(err)
			}
			return false, "volume " + string(pv.Status.Phase) + " " + pv.Status.Message, nil
		})
	}
}

// claimUsers describes the pods of the test's namespace that use claim name, for a wait's message.
func (f *fixture) claimUsers(ctx context.Context, name string) string {
	pods, err := f.client.CoreV1().Pods(f.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return " (listing pods: " + err.Error() + ")"
	}
	var users []string
	for _, p := range pods.Items {
		for _, v := range p.Spec.Volumes {
			if c := v.PersistentVolumeClaim; c != nil && c.ClaimName == name {
				state := string(p.Status.Phase)
				if p.DeletionTimestamp != nil {
					state += ", terminating since " + p.DeletionTimestamp.UTC().Format(time.RFC3339)
				}
				users = append(users, fmt.Sprintf("pod %s on %s (%s)", p.Name, p.Spec.NodeName, state))
			}
		}
	}
	if len(users) == 0 {
		return " (no pod uses it)"
	}
	return ", used by " + strings.Join(users, ", ")
}

func (f *fixture) checkClassBasePath(class, base string) func(*terraform.State) error {
	return func(*terraform.State) error {
		sc, err := f.client.StorageV1().StorageClasses().Get(context.Background(), class, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cfg := sc.Annotations["cas.openebs.io/config"]; !strings.Contains(cfg, fmt.Sprintf("%q", base)) {
			return fmt.Errorf("class %s has config %q, want BasePath %s", class, cfg, base)
		}
		return nil
	}
}

func (f *fixture) getWorkload(kind, name string) error {
	ctx := context.Background()
	var err error
	switch kind {
	case "DaemonSet":
		_, err = f.client.AppsV1().DaemonSets(f.ns).Get(ctx, name, metav1.GetOptions{})
	case "StatefulSet":
		_, err = f.client.AppsV1().StatefulSets(f.ns).Get(ctx, name, metav1.GetOptions{})
	default:
		_, err = f.client.AppsV1().Deployments(f.ns).Get(ctx, name, metav1.GetOptions{})
	}
	return err
}

func (f *fixture) checkAbsent(kind, name string) func(*terraform.State) error {
	return func(*terraform.State) error {
		if err := f.getWorkload(kind, name); !apierrors.IsNotFound(err) {
			return fmt.Errorf("%s %s/%s: want not found, got %v", kind, f.ns, name, err)
		}
		return nil
	}
}

func (f *fixture) checkDaemonSet(name string) func(*terraform.State) error {
	return func(*terraform.State) error {
		if err := f.getWorkload("DaemonSet", name); err != nil {
			return fmt.Errorf("DaemonSet %s/%s: %v", f.ns, name, err)
		}
		return nil
	}
}

// TestAccStorageBackend_forceDestroy: without waiting, the install returns at once; moving
// hostpath_base_path while a claim of the hostpath class exists is refused at plan, naming the
// claim, and goes ahead with force_strand_volumes; with force_destroy, destroy uninstalls
// although that claim exists.
func TestAccStorageBackend_forceDestroy(t *testing.T) {
	f := newFixture(t)
	class := acctest.RandomName("acc-hostpath")
	config := f.openebs("4.4.0", fmt.Sprintf("    hostpath_class_name = %q", class), "  wait = false\n  force_destroy = true")
	moved := t.TempDir()
	movedSettings := fmt.Sprintf("    hostpath_class_name = %q\n    hostpath_base_path = %q", class, moved)

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy: func(s *terraform.State) error {
			if err := f.checkReleaseGone("openebs")(s); err != nil {
				return err
			}
			// The claim is the user's: destroy leaves it.
			_, err := f.client.CoreV1().PersistentVolumeClaims(f.ns).Get(context.Background(), "data", metav1.GetOptions{})
			return err
		},
		Steps: []resource.TestStep{
			{
				Config: config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("status"), knownvalue.StringExact("deployed")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("wait"), knownvalue.Bool(false)),
				},
			},
			{
				PreConfig: func() { f.createClaim("data", class) },
				Config:    config,
				PlanOnly:  true,
			},
			{
				Config:   f.openebs("4.4.0", movedSettings, "  wait = false\n  force_destroy = true"),
				PlanOnly: true,
				ExpectError: acctest.ErrorRegexp(regexp.QuoteMeta(fmt.Sprintf("hostpath_base_path changes from /var/openebs/local to %s (openebs.io/local, class %s)", moved, class)) + ".*" +
					regexp.QuoteMeta(fmt.Sprintf("PersistentVolumeClaim %s/data (openebs.io/local, Pending, no volume yet): claim %s/data, class %s", f.ns, f.ns, class))),
			},
			{
				// A base path known only at apply: the guard runs there, before Helm is called.
				Config: f.openebs("4.4.0", fmt.Sprintf("    hostpath_class_name = %q\n    hostpath_base_path = terraform_data.base.output", class),
					"  wait = false\n  force_destroy = true") + fmt.Sprintf("\nresource \"terraform_data\" \"base\" {\n  input = %q\n}\n", moved),
				ExpectError: acctest.ErrorRegexp(regexp.QuoteMeta("would strand volumes") + ".*" +
					regexp.QuoteMeta(fmt.Sprintf("PersistentVolumeClaim %s/data (openebs.io/local, Pending, no volume yet)", f.ns))),
			},
			{
				// Nothing was upgraded by the refused apply.
				PreConfig: func() {
					if st, err := f.release(); err != nil || st.Revision != 1 {
						t.Fatalf("after the refused update the release is %+v (%v), want revision 1", st, err)
					}
				},
				Config: f.openebs("4.4.0", movedSettings, "  wait = false\n  force_destroy = true\n  force_strand_volumes = true"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				Check: f.checkClassBasePath(class, moved),
			},
		},
	})
}
