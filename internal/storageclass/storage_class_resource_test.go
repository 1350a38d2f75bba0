package storageclass_test

import (
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/importmark"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

const defaultAnnotation = "storageclass.kubernetes.io/is-default-class"

func TestAccStorageClass_lifecycle(t *testing.T) {
	acctest.RunsUnder(t, acctest.EveryCLI, acctest.OldestTerraform)
	name := acctest.RandomName("acc-sc")
	client := acctest.Kube(t)
	addr := "clusterstorage_storage_class.test"

	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy:             checkDestroyed(client, name),
		Steps: []resource.TestStep{
			{
				Config: acctest.ProviderConfig() + acctest.LoadConfig(t, "lifecycle.tf", name),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("id"), knownvalue.StringExact(name)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("reclaim_policy"), knownvalue.StringExact("Delete")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("volume_binding_mode"), knownvalue.StringExact("Immediate")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("allow_volume_expansion"), knownvalue.Bool(false)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("default"), knownvalue.Bool(false)),
				},
				Check: checkClass(client, name, func(sc *storagev1.StorageClass) error {
					if sc.Provisioner != "kubernetes.io/no-provisioner" || *sc.ReclaimPolicy != "Delete" || *sc.VolumeBindingMode != "Immediate" {
						return fmt.Errorf("unexpected class: provisioner %s, reclaim %s, binding %s", sc.Provisioner, *sc.ReclaimPolicy, *sc.VolumeBindingMode)
					}
					return nil
				}),
			},
			{
				// Fields Kubernetes can change are updated in place.
				Config: acctest.ProviderConfig() + acctest.LoadConfig(t, "lifecycle_2.tf", name),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("mount_options"), knownvalue.ListExact([]knownvalue.Check{
						knownvalue.StringExact("noatime"), knownvalue.StringExact("nodiratime"),
					})),
				},
				Check: checkClass(client, name, func(sc *storagev1.StorageClass) error {
					switch {
					case sc.AllowVolumeExpansion == nil || !*sc.AllowVolumeExpansion:
						return fmt.Errorf("allowVolumeExpansion not set")
					case len(sc.MountOptions) != 2 || sc.MountOptions[0] != "noatime":
						return fmt.Errorf("mountOptions = %v", sc.MountOptions)
					case sc.Labels["app.kubernetes.io/managed-by"] != "terraform" || sc.Annotations["example.com/tier"] != "fast":
						return fmt.Errorf("labels %v annotations %v", sc.Labels, sc.Annotations)
					case len(sc.AllowedTopologies) != 1 || len(sc.AllowedTopologies[0].MatchLabelExpressions[0].Values) != 2:
						return fmt.Errorf("allowedTopologies = %v", sc.AllowedTopologies)
					}
					return nil
				}),
			},
			{
				ResourceName:      addr,
				ImportState:       true,
				ImportStateId:     name,
				ImportStateVerify: true,
			},
			{
				// Fields Kubernetes forbids changing replace the class.
				Config: acctest.ProviderConfig() + acctest.LoadConfig(t, "lifecycle_3.tf", name),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionReplace),
				}},
				Check: checkClass(client, name, func(sc *storagev1.StorageClass) error {
					if sc.Provisioner != "example.com/fast" || sc.Parameters["type"] != "nvme" || *sc.ReclaimPolicy != "Retain" ||
						*sc.VolumeBindingMode != "WaitForFirstConsumer" || len(sc.MountOptions) != 0 || sc.Labels != nil {
						return fmt.Errorf("replacement not as planned: %+v", sc)
					}
					return nil
				}),
			},
		},
	})
}

func TestAccStorageClass_disappears(t *testing.T) {
	name := acctest.RandomName("acc-sc")
	client := acctest.Kube(t)
	config := acctest.ProviderConfig() + acctest.LoadConfig(t, "disappears.tf", name)

	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy:             checkDestroyed(client, name),
		Steps: []resource.TestStep{
			{
				Config: config,
				Check: func(*terraform.State) error {
					return client.StorageV1().StorageClasses().Delete(context.Background(), name, metav1.DeleteOptions{})
				},
				ExpectNonEmptyPlan: true,
			},
			{
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("clusterstorage_storage_class.test", plancheck.ResourceActionCreate),
				}},
				Check: checkClass(client, name, func(*storagev1.StorageClass) error { return nil }),
			},
		},
	})
}

// TestAccStorageClass_alreadyExists: a class made outside Terraform under the planned name is not
// taken over; the error says how to import it, both ways.
func TestAccStorageClass_alreadyExists(t *testing.T) {
	name := acctest.RandomName("acc-sc")
	client := acctest.Kube(t)
	if _, err := client.StorageV1().StorageClasses().Create(context.Background(), &storagev1.StorageClass{
		ObjectMeta:  metav1.ObjectMeta{Name: name, Labels: map[string]string{"owner": "someone-else"}},
		Provisioner: "kubernetes.io/no-provisioner",
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.StorageV1().StorageClasses().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	config := acctest.ProviderConfig() + acctest.LoadConfig(t, "already_exists.tf", name)

	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{
			{Config: config, ExpectError: acctest.ErrorWords("Creating StorageClass " + name + " failed")},
			{Config: config, ExpectError: acctest.ErrorWords("terraform import clusterstorage_storage_class.<name> " + name)},
			{Config: config, ExpectError: regexp.MustCompile(`import \{\s+to\s+=\s+clusterstorage_storage_class.<name>\s+id\s+=\s+"` + name + `"`)},
		},
	})
	sc, err := client.StorageV1().StorageClasses().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil || sc.Labels["owner"] != "someone-else" {
		t.Errorf("the class made outside Terraform was changed: %v", err)
	}
}

// TestAccStorageClass_leftByAnInterruptedApply: a class that carries the pending mark of a create
// whose provider died (importmark.PendingAnnotation, long enough ago) is taken over by the next
// create of its name, set as planned and unmarked; one marked differently in what cannot change is
// refused with what to do. (The fault matrix kills a real provider mid-create: internal/faults.)
func TestAccStorageClass_leftByAnInterruptedApply(t *testing.T) {
	client := acctest.Kube(t)
	leftover := func(name, provisioner string) {
		sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
			importmark.PendingAnnotation: time.Now().Add(-time.Minute).UTC().Format(time.RFC3339Nano),
		}}, Provisioner: provisioner}
		if _, err := client.StorageV1().StorageClasses().Create(context.Background(), sc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = client.StorageV1().StorageClasses().Delete(context.Background(), name, metav1.DeleteOptions{}) //nolint:errcheck // destroyed already
		})
	}
	same, other := acctest.RandomName("acc-sc"), acctest.RandomName("acc-sc")
	leftover(same, "kubernetes.io/no-provisioner")
	leftover(other, "example.com/another")
	config := func(name string) string {
		return acctest.ProviderConfig() + acctest.LoadConfig(t, "left_by_an_interrupted_apply.tf", name)
	}
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{
			{Config: config(other), ExpectError: acctest.ErrorWords("was left by an apply that was interrupted while it created it")},
			{
				Config: config(same),
				Check: func(*terraform.State) error {
					// The mark goes a moment after the create returns (importmark.ClearLater).
					return kube.Poll(context.Background(), 100*time.Millisecond, 10*time.Second, "the class taken over to be set and unmarked", func(ctx context.Context) (bool, string, error) {
						sc, err := client.StorageV1().StorageClasses().Get(ctx, same, metav1.GetOptions{})
						if err != nil {
							return false, "", err
						}
						_, marked := sc.Annotations[importmark.PendingAnnotation]
						return !marked && sc.Labels["team"] == "storage", fmt.Sprintf("annotations %v, labels %v", sc.Annotations, sc.Labels), nil
					})
				},
			},
			{Config: config(same), PlanOnly: true},
		},
	})
}

// TestAccStorageClass_unmanagedMetadata: labels and annotations other tools add cause no diff,
// while a change to a managed one does.
func TestAccStorageClass_unmanagedMetadata(t *testing.T) {
	name := acctest.RandomName("acc-sc")
	client := acctest.Kube(t)
	config := acctest.ProviderConfig() + acctest.LoadConfig(t, "unmanaged_metadata.tf", name)

	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy:             checkDestroyed(client, name),
		Steps: []resource.TestStep{
			{
				Config: config,
				Check: func(*terraform.State) error {
					return mergePatch(client, name, `{"metadata":{"labels":{"other-tool":"x"},"annotations":{"other-tool/note":"y"}}}`)
				},
			},
			{
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
			},
			{
				PreConfig: func() {
					if err := mergePatch(client, name, `{"metadata":{"labels":{"team":"changed"}}}`); err != nil {
						t.Fatal(err)
					}
				},
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("clusterstorage_storage_class.test", plancheck.ResourceActionUpdate),
				}},
				Check: checkClass(client, name, func(sc *storagev1.StorageClass) error {
					if sc.Labels["team"] != "storage" || sc.Labels["other-tool"] != "x" || sc.Annotations["other-tool/note"] != "y" {
						return fmt.Errorf("labels %v annotations %v", sc.Labels, sc.Annotations)
					}
					return nil
				}),
			},
		},
	})
}

// TestAccStorageClass_defaultSwitching runs serially: it changes which class is the cluster's default.
func TestAccStorageClass_defaultSwitching(t *testing.T) {
	a, b, outside := acctest.RandomName("acc-sc-a"), acctest.RandomName("acc-sc-b"), acctest.RandomName("acc-sc-outside")
	client := acctest.Kube(t)
	ctx := context.Background()
	t.Cleanup(func() {
		err := client.StorageV1().StorageClasses().Delete(ctx, outside, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting %s: %v", outside, err)
		}
	})
	config := func(aDefault, bDefault bool) string {
		return acctest.ProviderConfig() + acctest.LoadConfig(t, "default_switching.tf", a, aDefault, b, bDefault)
	}

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy:             resource.ComposeTestCheckFunc(checkDestroyed(client, a), checkDestroyed(client, b)),
		Steps: []resource.TestStep{
			{
				// A default class made outside Terraform loses its mark when a becomes the default.
				PreConfig: func() {
					sc := &storagev1.StorageClass{
						ObjectMeta:  metav1.ObjectMeta{Name: outside, Annotations: map[string]string{defaultAnnotation: "true"}},
						Provisioner: "rancher.io/local-path",
					}
					if _, err := client.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil {
						t.Fatal(err)
					}
				},
				Config: config(true, false),
				Check:  checkDefaults(client, a),
			},
			{
				Config: config(false, true),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("clusterstorage_storage_class.a", plancheck.ResourceActionUpdate),
					plancheck.ExpectResourceAction("clusterstorage_storage_class.b", plancheck.ResourceActionUpdate),
				}},
				Check: checkDefaults(client, b),
			},
			{
				// Someone marks another class default by hand: the next plan puts b back.
				PreConfig: func() {
					if err := mergePatch(client, outside, fmt.Sprintf(`{"metadata":{"annotations":{%q:"true"}}}`, defaultAnnotation)); err != nil {
						t.Fatal(err)
					}
				},
				Config: config(false, true),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("clusterstorage_storage_class.b", plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("clusterstorage_storage_class.b", tfjsonpath.New("default"), knownvalue.Bool(true)),
				},
				Check: checkDefaults(client, b),
			},
		},
	})
}

func TestAccStorageClass_badInput(t *testing.T) {
	cases := map[string]struct {
		body string
		want string
	}{
		"name not DNS-1123": {`name = "Fast_SSD"
  storage_provisioner = "x.io/y"`, `Invalid Kubernetes name`},
		"name suggestion": {`name = "Fast_SSD"
  storage_provisioner = "x.io/y"`, `name = "Fast_SSD" is not valid`},
		"name example": {`name = "Fast_SSD"
  storage_provisioner = "x.io/y"`, `Valid values look like "fast-ssd" and "local.disks-1". Did you mean "fast-ssd"?`},
		"reclaim policy": {`name = "ok"
  storage_provisioner = "x.io/y"
  reclaim_policy = "Recycle"`, `value must be one of`},
		"binding mode": {`name = "ok"
  storage_provisioner = "x.io/y"
  volume_binding_mode = "Lazy"`, `value must be one of`},
		"empty parameter key": {`name = "ok"
  storage_provisioner = "x.io/y"
  parameters = { "" = "v" }`, `length must be at least 1`},
		"provisioner": {`name = "ok"
  storage_provisioner = "not a provisioner"`, `must be a qualified name`},
		"default annotation": {`name = "ok"
  storage_provisioner = "x.io/y"
  annotations = { "storageclass.kubernetes.io/is-default-class" = "true" }`, "set `default = true` instead"},
		"label key": {`name = "ok"
  storage_provisioner = "x.io/y"
  labels = { "bad key" = "v" }`, `Invalid label key`},
		"topology without values": {`name = "ok"
  storage_provisioner = "x.io/y"
  allowed_topologies = [{ match_label_expressions = [{ key = "zone", values = [] }] }]`, `must contain at least 1 elements`},
		"topology without expressions": {`name = "ok"
  storage_provisioner = "x.io/y"
  allowed_topologies = [{ match_label_expressions = [] }]`, `must contain at least 1 elements`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			resource.ParallelTest(t, resource.TestCase{
				ProtoV6ProviderFactories: acctest.ProviderFactories,
				Steps: []resource.TestStep{{
					Config:      acctest.ProviderConfig() + "resource \"clusterstorage_storage_class\" \"bad\" {\n  " + tc.body + "\n}\n",
					PlanOnly:    true,
					ExpectError: acctest.ErrorWords(tc.want),
				}},
			})
		})
	}
}

func checkClass(client kubernetes.Interface, name string, check func(*storagev1.StorageClass) error) resource.TestCheckFunc {
	return func(*terraform.State) error {
		sc, err := client.StorageV1().StorageClasses().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading StorageClass %s: %w", name, err)
		}
		return check(sc)
	}
}

// checkDefaults verifies against the API that want is the only class marked default.
func checkDefaults(client kubernetes.Interface, want string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		list, err := client.StorageV1().StorageClasses().List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		var defaults []string
		for _, sc := range list.Items {
			if sc.Annotations[defaultAnnotation] == "true" {
				defaults = append(defaults, sc.Name)
			}
		}
		if len(defaults) != 1 || defaults[0] != want {
			return fmt.Errorf("default classes = %v, want only %s", defaults, want)
		}
		return nil
	}
}

func checkDestroyed(client kubernetes.Interface, name string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		_, err := client.StorageV1().StorageClasses().Get(context.Background(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("StorageClass %s still exists after destroy", name)
	}
}

func mergePatch(client kubernetes.Interface, name, patch string) error {
	_, err := client.StorageV1().StorageClasses().Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}
