package storageclass_test

import (
	"context"
	"fmt"
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
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
)

// standInClass stands in for hashicorp/kubernetes's kubernetes_storage_class_v1 as far as a move
// reads it, after hashicorp/terraform-provider-kubernetes (main, 2026-08,
// kubernetes/resource_kubernetes_storage_class_v1.go and schema_metadata.go): `metadata` is a
// block of one element (SDKv2 stores it as a list) with `name`, the id is the class's name, and
// the class is made and deleted through the API. What differs: only metadata.name and
// storage_provisioner exist, both replace the class; the real resource is SDKv2 (protocol 5).
type standInClass struct{ client kubernetes.Interface }

type standInClassModel struct {
	ID          types.String `tfsdk:"id"`
	Metadata    types.List   `tfsdk:"metadata"`
	Provisioner types.String `tfsdk:"storage_provisioner"`
}

func (r *standInClass) Metadata(_ context.Context, _ fwresource.MetadataRequest, resp *fwresource.MetadataResponse) {
	resp.TypeName = "kubernetes_storage_class_v1"
}

func (r *standInClass) Schema(_ context.Context, _ fwresource.SchemaRequest, resp *fwresource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Attributes: map[string]schema.Attribute{
			"id":                  schema.StringAttribute{Computed: true, PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
			"storage_provisioner": schema.StringAttribute{Required: true, PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()}},
		},
		Blocks: map[string]schema.Block{
			"metadata": schema.ListNestedBlock{
				NestedObject:  schema.NestedBlockObject{Attributes: map[string]schema.Attribute{"name": schema.StringAttribute{Required: true}}},
				PlanModifiers: []planmodifier.List{listplanmodifier.RequiresReplace()},
			},
		},
	}
}

func (r *standInClass) name(ctx context.Context, m standInClassModel) string {
	var meta []struct {
		Name types.String `tfsdk:"name"`
	}
	m.Metadata.ElementsAs(ctx, &meta, false)
	if len(meta) == 0 {
		return ""
	}
	return meta[0].Name.ValueString()
}

func (r *standInClass) Create(ctx context.Context, req fwresource.CreateRequest, resp *fwresource.CreateResponse) {
	var m standInClassModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: r.name(ctx, m)}, Provisioner: m.Provisioner.ValueString()}
	if _, err := r.client.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil {
		resp.Diagnostics.AddError("creating the class", err.Error())
		return
	}
	m.ID = types.StringValue(sc.Name)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *standInClass) Read(context.Context, fwresource.ReadRequest, *fwresource.ReadResponse) {}

func (r *standInClass) Update(context.Context, fwresource.UpdateRequest, *fwresource.UpdateResponse) {
}

func (r *standInClass) Delete(ctx context.Context, req fwresource.DeleteRequest, resp *fwresource.DeleteResponse) {
	var m standInClassModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if err := r.client.StorageV1().StorageClasses().Delete(ctx, m.ID.ValueString(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		resp.Diagnostics.AddError("deleting the class", err.Error())
	}
}

// TestAccStorageClass_movedFromKubernetes: a class kubernetes_storage_class_v1 made is moved into
// clusterstorage_storage_class with a `moved` block (Terraform 1.8+ and OpenTofu; older Terraform
// refuses a move across types, so the test runs where the CLI can): the plan is empty for a
// configuration that matches the class (the move imported it; nothing deleted or re-created: the
// class keeps its UID), and the resource manages it from then on (destroy deletes it).
func TestAccStorageClass_movedFromKubernetes(t *testing.T) {
	name := acctest.RandomName("acc-sc")
	client := acctest.Kube(t)
	addr := "clusterstorage_storage_class.test"
	var uid string
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_8_0)},
		ProtoV6ProviderFactories: acctest.FactoriesWith("kubernetes", func() fwresource.Resource { return &standInClass{client: client} }),
		CheckDestroy:             checkDestroyed(client, name),
		Steps: []resource.TestStep{
			{
				Config: fmt.Sprintf(`
resource "kubernetes_storage_class_v1" "local" {
  metadata {
    name = %q
  }
  storage_provisioner = "kubernetes.io/no-provisioner"
}`, name),
				Check: checkClass(client, name, func(sc *storagev1.StorageClass) error {
					uid = string(sc.UID)
					return nil
				}),
			},
			{
				Config: acctest.ProviderConfig() + fmt.Sprintf(`
moved {
  from = kubernetes_storage_class_v1.local
  to   = clusterstorage_storage_class.test
}

resource "clusterstorage_storage_class" "test" {
  name                = %q
  storage_provisioner = "kubernetes.io/no-provisioner"
}`, name),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionNoop),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("id"), knownvalue.StringExact(name)),
				},
				Check: resource.ComposeTestCheckFunc(
					func(s *terraform.State) error {
						if _, ok := s.RootModule().Resources["kubernetes_storage_class_v1.local"]; ok {
							return fmt.Errorf("kubernetes_storage_class_v1.local is still in state after the move")
						}
						return nil
					},
					checkClass(client, name, func(sc *storagev1.StorageClass) error {
						if string(sc.UID) != uid {
							return fmt.Errorf("the class was re-created: UID %s, was %s", sc.UID, uid)
						}
						return nil
					}),
				),
			},
		},
	})
}
