// Package listres is the skeleton every list resource of the provider shares (`terraform query`,
// Terraform 1.14+): the type name and Configure, the config schema of optional string filters, the
// config read with the provider check, the stream of results (limit, identity, display name,
// include_resource, objects not offered for import) and the import state a result carries. A type
// package gives what is its own: which objects, how each is named, identified and imported.
package listres

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/list"
	listschema "github.com/hashicorp/terraform-plugin-framework/list/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/providerdata"
)

// Base is embedded by a list resource: its Metadata and Configure, and the provider's shared
// clients in Data once configured.
type Base struct {
	// TypeSuffix follows the provider's name in the type name, e.g. "_storage_class": the
	// resource's own.
	TypeSuffix string
	// What names the objects listed in messages, e.g. "StorageClasses".
	What string
	// Data is what the provider's Configure handed over (nil before).
	Data *providerdata.Data
}

// Metadata sets the type name: the resource's.
func (b *Base) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + b.TypeSuffix
}

// Configure receives the provider's shared clients and node access.
func (b *Base) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	b.Data = providerdata.From(req.ProviderData, &resp.Diagnostics)
}

// Config reads the list block's config into config (a pointer to the type's model) and checks
// that the provider was configured. On false the stream carries the diagnostics and List returns.
func (b *Base) Config(ctx context.Context, req list.ListRequest, stream *list.ListResultsStream, config any) bool {
	diags := req.Config.Get(ctx, config)
	if b.Data == nil {
		diags.AddError("Provider not configured", "The clusterstorage provider was not configured before listing "+b.What+
			"; this is a bug in the provider or in Terraform, please report it.")
	}
	if diags.HasError() {
		stream.Results = list.ListResultsStreamDiagnostics(diags)
		return false
	}
	return true
}

// Fail ends the listing with one error.
func Fail(stream *list.ListResultsStream, summary, detail string) {
	var diags diag.Diagnostics
	diags.AddError(summary, detail)
	stream.Results = list.ListResultsStreamDiagnostics(diags)
}

// Filter is one optional string attribute of a list block's config.
type Filter struct {
	Description string
	// OneOf, when set, holds the values it takes; otherwise any non-empty string.
	OneOf []string
}

// Schema is a list block's config schema: its description and its filters by attribute name.
func Schema(description string, filters map[string]Filter) listschema.Schema {
	attrs := make(map[string]listschema.Attribute, len(filters))
	for name, f := range filters {
		var v validator.String = stringvalidator.LengthAtLeast(1)
		if len(f.OneOf) > 0 {
			v = stringvalidator.OneOf(f.OneOf...)
		}
		attrs[name] = listschema.StringAttribute{Optional: true, MarkdownDescription: f.Description, Validators: []validator.String{v}}
	}
	return listschema.Schema{MarkdownDescription: description, Attributes: attrs}
}

// Results is how a type turns one listed object into a result.
type Results[T any] struct {
	// DisplayName is what `terraform query` shows for the object.
	DisplayName func(T) string
	// Identity sets the result's identity.
	Identity func(context.Context, T, *tfsdk.ResourceIdentity) diag.Diagnostics
	// Imported sets the result's resource to what an import of the object records (with
	// include_resource only): see Imported.
	Imported func(context.Context, T, *list.ListResult) diag.Diagnostics
	// NotOffered, when set, names why an object is not offered for import (a warning's summary
	// and detail; "" when it is offered). Problems checking it go into diags as warnings.
	NotOffered func(ctx context.Context, item T, diags *diag.Diagnostics) (summary, detail string)
}

// Stream sets the stream to the results of items, in their order: at most req.Limit results,
// each with its display name, identity and, with include_resource, its resource. An object not
// offered for import is a warning alone, which Terraform shows and does not count as a result
// (nor does the limit).
func Stream[T any](ctx context.Context, req list.ListRequest, stream *list.ListResultsStream, items []T, r Results[T]) {
	stream.Results = func(push func(list.ListResult) bool) {
		n := int64(0)
		for _, item := range items {
			if req.Limit > 0 && n >= req.Limit {
				return
			}
			res := req.NewListResult(ctx)
			if r.NotOffered != nil {
				if summary, detail := r.NotOffered(ctx, item, &res.Diagnostics); summary != "" {
					res = list.ListResult{}
					res.Diagnostics.AddWarning(summary, detail)
					if !push(res) {
						return
					}
					continue
				}
			}
			n++
			res.DisplayName = r.DisplayName(item)
			res.Diagnostics.Append(r.Identity(ctx, item, res.Identity)...)
			if req.IncludeResource {
				res.Diagnostics.Append(r.Imported(ctx, item, &res)...)
			}
			if !push(res) {
				return
			}
		}
	}
}

// Imported sets res's resource to what an import of the object with this id records: the state
// ImportState starts from (the id alone) read into the type's model M, changed by observe as the
// Read after an import changes it, and set back unless that failed.
func Imported[M any](ctx context.Context, res *list.ListResult, id string, observe func(m *M, diags *diag.Diagnostics)) diag.Diagnostics {
	var diags diag.Diagnostics
	diags.Append(res.Resource.SetAttribute(ctx, path.Root("id"), id)...)
	var m M
	diags.Append(res.Resource.Get(ctx, &m)...)
	if diags.HasError() {
		return diags
	}
	observe(&m, &diags)
	if diags.HasError() {
		return diags
	}
	diags.Append(res.Resource.Set(ctx, &m)...)
	return diags
}
