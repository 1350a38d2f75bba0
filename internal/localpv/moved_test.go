package localpv_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	fwresource "github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"
	corev1 "k8s.io/api/core/v1"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
)

// standInPV is kubernetes_persistent_volume_v1 as far as a move reads it (acctest.KubernetesStandIn;
// the real resource is kubernetes/resource_kubernetes_persistent_volume_v1.go, id = name,
// metadata a list block): its `spec` block (capacity, access modes,
// persistent_volume_source.local.path, node_affinity) is three flat attributes here, capacity,
// path and node, and the volume it makes is the local volume a user writes with it
// (ReadWriteOnce, Filesystem, Retain, pinned by kubernetes.io/hostname).
func standInPV(client kubernetes.Interface) fwresource.Resource {
	return &acctest.KubernetesStandIn{
		Type:       "kubernetes_persistent_volume_v1",
		Attributes: []string{"capacity", "path", "node"},
		Make: func(ctx context.Context, name string, a map[string]string) error {
			capacity, err := k8sresource.ParseQuantity(a["capacity"])
			if err != nil {
				return err
			}
			mode := corev1.PersistentVolumeFilesystem
			_, err = client.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: corev1.PersistentVolumeSpec{
					Capacity:                      corev1.ResourceList{corev1.ResourceStorage: capacity},
					AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
					VolumeMode:                    &mode,
					PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: a["path"]}},
					NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
						MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{a["node"]}}},
					}}}},
				},
			}, metav1.CreateOptions{})
			return err
		},
		Remove: func(ctx context.Context, name string) error {
			return client.CoreV1().PersistentVolumes().Delete(ctx, name, metav1.DeleteOptions{})
		},
	}
}

// TestAccLocalPV_movedFromKubernetes: a local volume kubernetes_persistent_volume_v1 made, its
// directory made by the user beforehand, is moved into clusterstorage_local_pv with a `moved`
// block (Terraform 1.8+ and OpenTofu; older Terraform refuses a move across types): the plan is
// empty for a configuration that matches the volume (nothing deleted or re-created: the volume
// keeps its UID), and the resource manages it from then on (destroy deletes the volume and, as
// the default delete_directory_on_destroy = false says, keeps the directory and its data).
func TestAccLocalPV_movedFromKubernetes(t *testing.T) {
	acctest.RunsUnder(t, acctest.EveryCLI)
	f := newFixture(t)
	name := acctest.RandomName("acc-pv")
	dir := filepath.Join(f.root, "disks", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil { // the umask may have taken bits away
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "data"), []byte("kept"), 0o600); err != nil {
		t.Fatal(err)
	}
	var uid string
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_8_0)},
		ProtoV6ProviderFactories: acctest.FactoriesWith("kubernetes", func() fwresource.Resource { return standInPV(f.client) }),
		CheckDestroy:             f.checkDestroyed(name),
		Steps: []resource.TestStep{
			{
				Config: acctest.LoadConfig(t, "moved_from_kubernetes.tf", name, dir, f.node),
				Check: f.checkPV(name, func(pv *corev1.PersistentVolume) error {
					uid = string(pv.UID)
					return nil
				}),
			},
			{
				Config: f.config(acctest.LoadConfig(t, "moved_from_kubernetes_2.tf", name, f.node, dir)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionNoop),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("id"), knownvalue.StringExact(name)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("directory_exists"), knownvalue.Bool(true)),
				},
				Check: resource.ComposeTestCheckFunc(
					acctest.CheckMovedAway("kubernetes_persistent_volume_v1.disk"),
					f.checkPV(name, func(pv *corev1.PersistentVolume) error {
						if string(pv.UID) != uid {
							return fmt.Errorf("the volume was re-created by the move: UID %s, was %s", pv.UID, uid)
						}
						return nil
					}),
				),
			},
		},
	})
	if got, err := os.ReadFile(filepath.Join(dir, "data")); err != nil || string(got) != "kept" {
		t.Errorf("the volume's data after destroy: %q, %v; want it kept", got, err)
	}
}
