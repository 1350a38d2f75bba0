package localpv

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
	corev1 "k8s.io/api/core/v1"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/importmark"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/providerdata"
)

var _ list.ListResourceWithConfigure = &ListResource{}

// provisionedByAnnotation marks a volume a provisioner made for a claim: it is the provisioner's.
const provisionedByAnnotation = "pv.kubernetes.io/provisioned-by"

// NewListResource returns the clusterstorage_local_pv list resource, for `terraform query`
// (Terraform 1.14+).
func NewListResource() list.ListResource {
	return &ListResource{}
}

// ListResource lists the local PersistentVolumes this resource can adopt, each with its identity
// and, with include_resource, the state an import of it records (the directory looked at over
// SSH, as the import's Read does), so that `terraform query -generate-config-out` writes a
// configuration that plans no change.
type ListResource struct {
	data *providerdata.Data
}

type listModel struct {
	Node             types.String `tfsdk:"node"`
	StorageClassName types.String `tfsdk:"storage_class_name"`
}

// Metadata sets the type name: the resource's.
func (r *ListResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_local_pv"
}

// Configure receives the provider's shared clients and node access.
func (r *ListResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.data = providerdata.From(req.ProviderData, &resp.Diagnostics)
}

// ListResourceConfigSchema describes the list block's `config`.
func (r *ListResource) ListResourceConfigSchema(_ context.Context, _ list.ListResourceSchemaRequest, resp *list.ListResourceSchemaResponse) {
	resp.Schema = listschema.Schema{
		MarkdownDescription: "The local PersistentVolumes `clusterstorage_local_pv` can adopt, for `terraform query` (Terraform 1.14+): " +
			"volumes with a `local` source pinned to one node by a `" + hostnameLabel + " In [<node>]` node-affinity term, " +
			"not made by a provisioner for a claim (annotation `" + provisionedByAnnotation + "`: those are the provisioner's) and not being deleted. " +
			"Each comes with its identity, and with `include_resource = true` the settings an import records (the directory is looked at " +
			"over SSH as the import does), so that `terraform query -generate-config-out=generated.tf` writes resource and import blocks that plan no change.",
		Attributes: map[string]listschema.Attribute{
			"node": listschema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "List only the volumes pinned to this node (its `" + hostnameLabel + "` label; default: every node).",
				Validators:          []validator.String{stringvalidator.LengthAtLeast(1)},
			},
			"storage_class_name": listschema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "List only the volumes of this StorageClass (default: every class, and volumes of none).",
				Validators:          []validator.String{stringvalidator.LengthAtLeast(1)},
			},
		},
	}
}

// List streams the adoptable volumes, sorted by name, from the provider's snapshot of all volumes
// (one LIST for the run).
func (r *ListResource) List(ctx context.Context, req list.ListRequest, stream *list.ListResultsStream) {
	var config listModel
	diags := req.Config.Get(ctx, &config)
	if r.data == nil {
		diags.AddError("Provider not configured", "The clusterstorage provider was not configured before listing PersistentVolumes; this is a bug in the provider or in Terraform, please report it.")
	}
	if diags.HasError() {
		stream.Results = list.ListResultsStreamDiagnostics(diags)
		return
	}
	all, err := r.data.PersistentVolumes.All(ctx)
	if err != nil {
		diags.AddError("Listing PersistentVolumes failed", err.Error())
		stream.Results = list.ListResultsStreamDiagnostics(diags)
		return
	}
	var volumes []*corev1.PersistentVolume
	for _, pv := range all {
		if why := notAdoptable(pv); why != "" {
			if pv.Spec.Local != nil {
				tflog.Debug(ctx, "not listing a local PersistentVolume", map[string]any{"name": pv.Name, "reason": why})
			}
			continue
		}
		if (config.Node.IsNull() || nodeOf(pv) == config.Node.ValueString()) &&
			(config.StorageClassName.IsNull() || pv.Spec.StorageClassName == config.StorageClassName.ValueString()) {
			volumes = append(volumes, pv)
		}
	}
	slices.SortFunc(volumes, func(a, b *corev1.PersistentVolume) int { return strings.Compare(a.Name, b.Name) })
	tflog.Debug(ctx, "listing local PersistentVolumes", map[string]any{"node": config.Node.ValueString(),
		"storage_class_name": config.StorageClassName.ValueString(), "found": len(volumes), "of": len(all)})
	stream.Results = func(push func(list.ListResult) bool) {
		for i, pv := range volumes {
			if req.Limit > 0 && int64(i) >= req.Limit {
				return
			}
			res := req.NewListResult(ctx)
			res.DisplayName = displayName(pv)
			res.Diagnostics.Append(importmark.SetNameIdentity(ctx, res.Identity, pv.Name)...)
			if req.IncludeResource {
				res.Diagnostics.Append(r.imported(ctx, pv, &res)...)
			}
			if !push(res) {
				return
			}
		}
	}
}

// notAdoptable says why pv cannot be imported as clusterstorage_local_pv, or "".
func notAdoptable(pv *corev1.PersistentVolume) string {
	switch {
	case pv.Spec.Local == nil:
		return "not a local volume"
	case nodeOf(pv) == "":
		return "not pinned to a node by a " + hostnameLabel + " In [<node>] term"
	case pv.Annotations[provisionedByAnnotation] != "":
		return "made by the provisioner " + pv.Annotations[provisionedByAnnotation] + " for a claim"
	case pv.DeletionTimestamp != nil:
		return "being deleted"
	}
	return ""
}

// imported sets the result's resource to what an import of pv records: the state ImportState
// starts from (the id alone), observed as the Read after an import observes it, the directory
// looked at on the node.
func (r *ListResource) imported(ctx context.Context, pv *corev1.PersistentVolume, res *list.ListResult) diag.Diagnostics {
	var diags diag.Diagnostics
	diags.Append(res.Resource.SetAttribute(ctx, path.Root("id"), pv.Name)...)
	var m model
	diags.Append(res.Resource.Get(ctx, &m)...)
	if diags.HasError() {
		return diags
	}
	dir := (&Resource{data: r.data}).statDir(ctx, nodeOf(pv), pv.Spec.Local.Path, &diags)
	m.observed(pv, dir, true)
	diags.Append(res.Resource.Set(ctx, &m)...)
	return diags
}

// displayName is "<name> (<node>:<path>, <capacity>[, class <class>][, bound to <namespace>/<claim>])".
func displayName(pv *corev1.PersistentVolume) string {
	capacity := pv.Spec.Capacity[corev1.ResourceStorage]
	parts := []string{nodeOf(pv) + ":" + pv.Spec.Local.Path, capacity.String()}
	if pv.Spec.StorageClassName != "" {
		parts = append(parts, "class "+pv.Spec.StorageClassName)
	}
	if ref := pv.Spec.ClaimRef; ref != nil && pv.Status.Phase == corev1.VolumeBound {
		parts = append(parts, "bound to "+ref.Namespace+"/"+ref.Name)
	}
	return pv.Name + " (" + strings.Join(parts, ", ") + ")"
}
