package storageclass

import (
	"context"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/list"
	listschema "github.com/hashicorp/terraform-plugin-framework/list/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/importmark"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/providerdata"
)

var _ list.ListResourceWithConfigure = &ListResource{}

// NewListResource returns the clusterstorage_storage_class list resource, for `terraform query`
// (Terraform 1.14+).
func NewListResource() list.ListResource {
	return &ListResource{}
}

// ListResource lists the cluster's StorageClasses, each with its identity and, with
// include_resource, the state an import of it records, so that `terraform query
// -generate-config-out` writes a configuration that plans no change.
type ListResource struct {
	data *providerdata.Data
}

type listModel struct {
	Provisioner types.String `tfsdk:"storage_provisioner"`
}

// Metadata sets the type name: the resource's.
func (r *ListResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_storage_class"
}

// Configure receives the provider's shared clients.
func (r *ListResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.data = providerdata.From(req.ProviderData, &resp.Diagnostics)
}

// ListResourceConfigSchema describes the list block's `config`.
func (r *ListResource) ListResourceConfigSchema(_ context.Context, _ list.ListResourceSchemaRequest, resp *list.ListResourceSchemaResponse) {
	resp.Schema = listschema.Schema{
		MarkdownDescription: "Every StorageClass of the cluster, for `terraform query` (Terraform 1.14+): each with its identity, and with " +
			"`include_resource = true` the settings an import records, so that `terraform query -generate-config-out=generated.tf` writes " +
			"resource and import blocks that plan no change. A class a Helm release installed is listed with the release named in its " +
			"display name: managing it here too would fight the release.",
		Attributes: map[string]listschema.Attribute{
			"storage_provisioner": listschema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "List only the classes of this provisioner, e.g. `kubernetes.io/no-provisioner` or `openebs.io/local` (default: every class).",
				Validators:          []validator.String{stringvalidator.LengthAtLeast(1)},
			},
		},
	}
}

// List streams the classes, sorted by name, from the provider's snapshot of all classes (one
// LIST for the run).
func (r *ListResource) List(ctx context.Context, req list.ListRequest, stream *list.ListResultsStream) {
	var config listModel
	diags := req.Config.Get(ctx, &config)
	if r.data == nil {
		diags.AddError("Provider not configured", "The clusterstorage provider was not configured before listing StorageClasses; this is a bug in the provider or in Terraform, please report it.")
	}
	if diags.HasError() {
		stream.Results = list.ListResultsStreamDiagnostics(diags)
		return
	}
	all, err := r.data.StorageClasses.All(ctx)
	if err != nil {
		diags.AddError("Listing StorageClasses failed", err.Error())
		stream.Results = list.ListResultsStreamDiagnostics(diags)
		return
	}
	var classes []*storagev1.StorageClass
	for _, sc := range all {
		if config.Provisioner.IsNull() || sc.Provisioner == config.Provisioner.ValueString() {
			classes = append(classes, sc)
		}
	}
	slices.SortFunc(classes, func(a, b *storagev1.StorageClass) int { return strings.Compare(a.Name, b.Name) })
	tflog.Debug(ctx, "listing StorageClasses", map[string]any{"provisioner": config.Provisioner.ValueString(), "found": len(classes), "of": len(all)})
	stream.Results = func(push func(list.ListResult) bool) {
		for i, sc := range classes {
			if req.Limit > 0 && int64(i) >= req.Limit {
				return
			}
			res := req.NewListResult(ctx)
			res.DisplayName = displayName(sc)
			res.Diagnostics.Append(importmark.SetNameIdentity(ctx, res.Identity, sc.Name)...)
			if req.IncludeResource {
				res.Diagnostics.Append(r.imported(ctx, sc, &res)...)
			}
			if !push(res) {
				return
			}
		}
	}
}

// imported sets the result's resource to what an import of sc records: the state ImportState
// starts from (the id alone), observed as the Read after an import observes it.
func (r *ListResource) imported(ctx context.Context, sc *storagev1.StorageClass, res *list.ListResult) diag.Diagnostics {
	var diags diag.Diagnostics
	diags.Append(res.Resource.SetAttribute(ctx, path.Root("id"), sc.Name)...)
	var m model
	diags.Append(res.Resource.Get(ctx, &m)...)
	isDefault, err := soleDefault(ctx, r.data.StorageClasses, sc)
	if err != nil {
		diags.AddError("Listing StorageClasses failed", err.Error())
	}
	if diags.HasError() {
		return diags
	}
	m.observed(sc, isDefault, true)
	diags.Append(res.Resource.Set(ctx, &m)...)
	return diags
}

// helmReleaseAnnotations are the annotations Helm puts on what a release installed.
const (
	helmReleaseName      = "meta.helm.sh/release-name"
	helmReleaseNamespace = "meta.helm.sh/release-namespace"
)

// displayName is "<name> (<provisioner>[, default][, Helm release <namespace>/<release>])".
func displayName(sc *storagev1.StorageClass) string {
	parts := []string{sc.Provisioner}
	if isMarkedDefault(sc) {
		parts = append(parts, "default")
	}
	if release := sc.Annotations[helmReleaseName]; release != "" {
		parts = append(parts, "Helm release "+sc.Annotations[helmReleaseNamespace]+"/"+release)
	}
	return sc.Name + " (" + strings.Join(parts, ", ") + ")"
}
