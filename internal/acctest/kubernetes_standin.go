package acctest

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// KubernetesStandIn stands in for one of hashicorp/kubernetes's resources as far as a `moved`
// block reads it, after hashicorp/terraform-provider-kubernetes (main, 2026-08,
// kubernetes/schema_metadata.go and the resources' files): `metadata` is a block of one element
// (SDKv2 stores it as a list) with `name`, the id is the object's name, and the object is made
// and deleted through the API. What differs: the real resources' other blocks (a volume's
// `spec`, say) are flat string attributes here, all required and each replacing the object;
// nothing is read back; the real provider is SDKv2 (protocol 5). Serve it with FactoriesWith
// under the name "kubernetes".
type KubernetesStandIn struct {
	// Type is the resource type, such as kubernetes_storage_class_v1.
	Type string
	// Attributes name its string attributes besides metadata.
	Attributes []string
	// Make makes the object called name from the attributes' values; Remove deletes it (an
	// object already gone is not an error).
	Make   func(ctx context.Context, name string, attributes map[string]string) error
	Remove func(ctx context.Context, name string) error
}

var _ resource.Resource = &KubernetesStandIn{}

func (r *KubernetesStandIn) Metadata(_ context.Context, _ resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = r.Type
}

func (r *KubernetesStandIn) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	attributes := map[string]schema.Attribute{
		"id": schema.StringAttribute{Computed: true, PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
	}
	for _, name := range r.Attributes {
		attributes[name] = schema.StringAttribute{Required: true, PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()}}
	}
	resp.Schema = schema.Schema{
		Attributes: attributes,
		Blocks: map[string]schema.Block{
			"metadata": schema.ListNestedBlock{
				NestedObject:  schema.NestedBlockObject{Attributes: map[string]schema.Attribute{"name": schema.StringAttribute{Required: true}}},
				PlanModifiers: []planmodifier.List{listplanmodifier.RequiresReplace()},
			},
		},
	}
}

func (r *KubernetesStandIn) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var metadata []struct {
		Name types.String `tfsdk:"name"`
	}
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("metadata"), &metadata)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if len(metadata) != 1 {
		resp.Diagnostics.AddError("Invalid metadata", "The stand-in "+r.Type+" needs exactly one metadata block.")
		return
	}
	name := metadata[0].Name.ValueString()
	values := map[string]string{}
	for _, attribute := range r.Attributes {
		var v types.String
		resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root(attribute), &v)...)
		values[attribute] = v.ValueString()
	}
	if resp.Diagnostics.HasError() {
		return
	}
	if err := r.Make(ctx, name, values); err != nil {
		resp.Diagnostics.AddError("Creating "+name+" failed", err.Error())
		return
	}
	resp.State.Raw = req.Plan.Raw
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), name)...)
}

func (r *KubernetesStandIn) Read(context.Context, resource.ReadRequest, *resource.ReadResponse) {}

func (r *KubernetesStandIn) Update(context.Context, resource.UpdateRequest, *resource.UpdateResponse) {
}

func (r *KubernetesStandIn) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var id types.String
	resp.Diagnostics.Append(req.State.GetAttribute(ctx, path.Root("id"), &id)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if err := r.Remove(ctx, id.ValueString()); err != nil && !apierrors.IsNotFound(err) {
		resp.Diagnostics.AddError("Deleting "+id.ValueString()+" failed", err.Error())
	}
}
