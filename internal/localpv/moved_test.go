package localpv_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	fwresource "github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
)

// standInPV stands in for hashicorp/kubernetes's kubernetes_persistent_volume_v1 as far as a move
// reads it, after hashicorp/terraform-provider-kubernetes (main, 2026-08,
// kubernetes/resource_kubernetes_persistent_volume_v1.go and schema_metadata.go): `metadata` is a
// block of one element (SDKv2 stores it as a list) with `name`, the id is the volume's name, and
// the volume is made and deleted through the API. What differs: the real resource's `spec` block
// (capacity, access modes, persistent_volume_source.local.path, node_affinity) is three flat
// attributes here (capacity, path, node), each replacing the volume; the volume it makes is the
// local volume a user writes with it (ReadWriteOnce, Filesystem, Retain, pinned by
// kubernetes.io/hostname); the real resource is SDKv2 (protocol 5).
type standInPV struct{ client kubernetes.Interface }

type standInPVModel struct {
	ID       types.String `tfsdk:"id"`
	Metadata types.List   `tfsdk:"metadata"`
	Capacity types.String `tfsdk:"capacity"`
	Path     types.String `tfsdk:"path"`
	Node     types.String `tfsdk:"node"`
}

func (r *standInPV) Metadata(_ context.Context, _ fwresource.MetadataRequest, resp *fwresource.MetadataResponse) {
	resp.TypeName = "kubernetes_persistent_volume_v1"
}

func (r *standInPV) Schema(_ context.Context, _ fwresource.SchemaRequest, resp *fwresource.SchemaResponse) {
	replaced := func() schema.StringAttribute {
		return schema.StringAttribute{Required: true, PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()}}
	}
	resp.Schema = schema.Schema{
		Attributes: map[string]schema.Attribute{
			"id":       schema.StringAttribute{Computed: true, PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
			"capacity": replaced(),
			"path":     replaced(),
			"node":     replaced(),
		},
		Blocks: map[string]schema.Block{
			"metadata": schema.ListNestedBlock{
				NestedObject:  schema.NestedBlockObject{Attributes: map[string]schema.Attribute{"name": schema.StringAttribute{Required: true}}},
				PlanModifiers: []planmodifier.List{listplanmodifier.RequiresReplace()},
			},
		},
	}
}

func (r *standInPV) Create(ctx context.Context, req fwresource.CreateRequest, resp *fwresource.CreateResponse) {
	var m standInPVModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	var meta []struct {
		Name types.String `tfsdk:"name"`
	}
	resp.Diagnostics.Append(m.Metadata.ElementsAs(ctx, &meta, false)...)
	if resp.Diagnostics.HasError() || len(meta) != 1 {
		resp.Diagnostics.AddError("metadata", "one metadata block is required")
		return
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: meta[0].Name.ValueString()},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: k8sresource.MustParse(m.Capacity.ValueString())},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			VolumeMode:                    ptr(corev1.PersistentVolumeFilesystem),
			PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: m.Path.ValueString()}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{m.Node.ValueString()}}},
			}}}},
		},
	}
	if _, err := r.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		resp.Diagnostics.AddError("creating the volume", err.Error())
		return
	}
	m.ID = types.StringValue(pv.Name)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *standInPV) Read(context.Context, fwresource.ReadRequest, *fwresource.ReadResponse) {}

func (r *standInPV) Update(context.Context, fwresource.UpdateRequest, *fwresource.UpdateResponse) {}

func (r *standInPV) Delete(ctx context.Context, req fwresource.DeleteRequest, resp *fwresource.DeleteResponse) {
	var m standInPVModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if err := r.client.CoreV1().PersistentVolumes().Delete(ctx, m.ID.ValueString(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		resp.Diagnostics.AddError("deleting the volume", err.Error())
	}
}

func ptr[T any](v T) *T { return &v }

// TestAccLocalPV_movedFromKubernetes: a local volume kubernetes_persistent_volume_v1 made, its
// directory made by the user beforehand, is moved into clusterstorage_local_pv with a `moved`
// block (Terraform 1.8+ and OpenTofu; older Terraform refuses a move across types): the plan is
// empty for a configuration that matches the volume (nothing deleted or re-created: the volume
// keeps its UID), and the resource manages it from then on (destroy deletes the volume and, as
// the default delete_directory_on_destroy = false says, keeps the directory and its data).
func TestAccLocalPV_movedFromKubernetes(t *testing.T) {
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
		ProtoV6ProviderFactories: acctest.FactoriesWith("kubernetes", func() fwresource.Resource { return &standInPV{client: f.client} }),
		CheckDestroy:             f.checkDestroyed(name),
		Steps: []resource.TestStep{
			{
				Config: fmt.Sprintf(`
resource "kubernetes_persistent_volume_v1" "disk" {
  metadata {
    name = %q
  }
  capacity = "1Gi"
  path     = %q
  node     = %q
}`, name, dir, f.node),
				Check: f.checkPV(name, func(pv *corev1.PersistentVolume) error {
					uid = string(pv.UID)
					return nil
				}),
			},
			{
				Config: f.config(fmt.Sprintf(`
moved {
  from = kubernetes_persistent_volume_v1.disk
  to   = clusterstorage_local_pv.test
}

resource "clusterstorage_local_pv" "test" {
  name     = %q
  node     = %q
  path     = %q
  capacity = "1Gi"
}`, name, f.node, dir)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionNoop),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("id"), knownvalue.StringExact(name)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("directory_exists"), knownvalue.Bool(true)),
				},
				Check: resource.ComposeTestCheckFunc(
					func(s *terraform.State) error {
						if _, ok := s.RootModule().Resources["kubernetes_persistent_volume_v1.disk"]; ok {
							return fmt.Errorf("kubernetes_persistent_volume_v1.disk is still in state after the move")
						}
						return nil
					},
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
