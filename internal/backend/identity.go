package backend

import (
	"context"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/identityschema"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

var _ resource.ResourceWithIdentity = &Resource{}

// identityModel is the backend's resource identity (Terraform 1.12+, OpenTofu 1.12+): the Helm
// release, by its namespace and name. Neither changes while the resource lives (changing either
// replaces it).
type identityModel struct {
	Namespace   types.String `tfsdk:"namespace"`
	ReleaseName types.String `tfsdk:"release_name"`
}

// IdentitySchema describes the backend's resource identity: its Helm release.
func (r *Resource) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	resp.IdentitySchema = identityschema.Schema{Attributes: map[string]identityschema.Attribute{
		"namespace":    identityschema.StringAttribute{RequiredForImport: true, Description: "Namespace of the Helm release."},
		"release_name": identityschema.StringAttribute{RequiredForImport: true, Description: "Name of the Helm release."},
	}}
}

// setIdentity records the identity of m's release in a response. Create, Read, Update and
// ImportState all set it: Terraform 1.11 and older (and a state written before identities) send
// none to Update, and the framework requires one after each. A nil identity (a response without
// one) is left alone, as is a model whose release is not known.
func setIdentity(ctx context.Context, identity *tfsdk.ResourceIdentity, m model) diag.Diagnostics {
	if identity == nil || m.Namespace.IsUnknown() || m.Namespace.IsNull() || m.ReleaseName.IsUnknown() || m.ReleaseName.IsNull() {
		return nil
	}
	return identity.Set(ctx, identityModel{Namespace: m.Namespace, ReleaseName: m.ReleaseName})
}

// importTarget is the release an import names: the ID `<namespace>/<release_name>` of `terraform
// import` or of an import block's `id`, or an import block's `identity = { namespace = ...,
// release_name = ... }`. ok is false (with an error) when neither names one.
func importTarget(ctx context.Context, req resource.ImportStateRequest, diags *diag.Diagnostics) (ns, name string, ok bool) {
	if req.ID == "" && req.Identity != nil {
		var ident identityModel
		diags.Append(req.Identity.Get(ctx, &ident)...)
		if diags.HasError() {
			return "", "", false
		}
		ns, name = ident.Namespace.ValueString(), ident.ReleaseName.ValueString()
		if ns == "" || name == "" || strings.Contains(ns, "/") || strings.Contains(name, "/") {
			diags.AddError("Invalid import identity",
				"Import a storage backend by an identity naming its Helm release: `identity = { namespace = \"openebs\", release_name = \"openebs\" }`; got namespace "+
					quoteOrNull(ident.Namespace)+", release_name "+quoteOrNull(ident.ReleaseName)+".")
			return "", "", false
		}
		return ns, name, true
	}
	ns, name, ok = strings.Cut(req.ID, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		diags.AddError("Invalid import id",
			"Import a storage backend by <namespace>/<release_name>, e.g. `terraform import clusterstorage_storage_backend.openebs openebs/openebs` "+
				"(or an import block's `identity = { namespace = \"openebs\", release_name = \"openebs\" }`); got "+req.ID+".")
		return "", "", false
	}
	return ns, name, true
}

func quoteOrNull(v types.String) string {
	if v.IsNull() || v.IsUnknown() {
		return "null"
	}
	return `"` + v.ValueString() + `"`
}
