package importmark

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/identityschema"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// NameIdentity is the resource identity (Terraform 1.12+, OpenTofu 1.12+) of a cluster-scoped
// object known by its name alone: a StorageClass, a PersistentVolume. It never changes while the
// object lives: renaming one replaces it.
type NameIdentity struct {
	Name types.String `tfsdk:"name"`
}

// NameIdentitySchema is NameIdentity's schema; what is the name's description.
func NameIdentitySchema(what string) identityschema.Schema {
	return identityschema.Schema{Attributes: map[string]identityschema.Attribute{
		"name": identityschema.StringAttribute{RequiredForImport: true, Description: what},
	}}
}

// SetNameIdentity records the identity {name} in a response. Create, Read, Update and ImportState
// all set it: Terraform 1.11 and older (and a state written before identities) send none to
// update, and the framework requires one after each. A nil identity (a response of a resource
// served without identity) is left alone.
func SetNameIdentity(ctx context.Context, identity *tfsdk.ResourceIdentity, name string) diag.Diagnostics {
	if identity == nil {
		return nil
	}
	return identity.Set(ctx, NameIdentity{Name: types.StringValue(name)})
}

// ImportByID imports the resource by the name it was given, into the `id` attribute: the ID of
// `terraform import` or of an import block's `id`, or the `name` of an import block's `identity`
// (Terraform 1.12+, OpenTofu 1.12+). It sets the identity and marks the import.
func ImportByID(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	id := req.ID
	if id == "" && req.Identity != nil {
		var ident NameIdentity
		resp.Diagnostics.Append(req.Identity.Get(ctx, &ident)...)
		id = ident.Name.ValueString()
	}
	if id == "" && !resp.Diagnostics.HasError() {
		resp.Diagnostics.AddError("Missing import ID", "Import by the object's name: an import block's `id`, or its `identity = { name = \"...\" }`.")
	}
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), id)...)
	resp.Diagnostics.Append(SetNameIdentity(ctx, resp.Identity, id)...)
	resp.Diagnostics.Append(Mark(ctx, resp.Private)...)
}
