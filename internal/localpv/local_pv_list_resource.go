package localpv

import (
	"context"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	corev1 "k8s.io/api/core/v1"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/importmark"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/listres"
)

var _ list.ListResourceWithConfigure = &ListResource{}

// provisionedByAnnotation marks a volume a provisioner made for a claim: it is the provisioner's.
const provisionedByAnnotation = "pv.kubernetes.io/provisioned-by"

// NewListResource returns the clusterstorage_local_pv list resource, for `terraform query`
// (Terraform 1.14+).
func NewListResource() list.ListResource {
	return &ListResource{listres.Base{TypeSuffix: "_local_pv", What: "PersistentVolumes"}}
}

// ListResource lists the local PersistentVolumes this resource can adopt, each with its identity
// and, with include_resource, the state an import of it records (the directory looked at over
// SSH, as the import's Read does), so that `terraform query -generate-config-out` writes a
// configuration that plans no change.
type ListResource struct {
	listres.Base
}

type listModel struct {
	Node             types.String `tfsdk:"node"`
	StorageClassName types.String `tfsdk:"storage_class_name"`
}

// ListResourceConfigSchema describes the list block's `config`.
func (r *ListResource) ListResourceConfigSchema(_ context.Context, _ list.ListResourceSchemaRequest, resp *list.ListResourceSchemaResponse) {
	resp.Schema = listres.Schema("The local PersistentVolumes `clusterstorage_local_pv` can adopt, for `terraform query` (Terraform 1.14+): "+
		"volumes with a `local` source pinned to one node by a `"+hostnameLabel+" In [<node>]` node-affinity term, "+
		"not made by a provisioner for a claim (annotation `"+provisionedByAnnotation+"`: those are the provisioner's) and not being deleted. "+
		"Each comes with its identity, and with `include_resource = true` the settings an import records (the directory is looked at "+
		"over SSH as the import does), so that `terraform query -generate-config-out=generated.tf` writes resource and import blocks that plan no change.",
		map[string]listres.Filter{
			"node":               {Description: "List only the volumes pinned to this node (its `" + hostnameLabel + "` label; default: every node)."},
			"storage_class_name": {Description: "List only the volumes of this StorageClass (default: every class, and volumes of none)."},
		})
}

// List streams the adoptable volumes, sorted by name, from the provider's snapshot of all volumes
// (one LIST for the run).
func (r *ListResource) List(ctx context.Context, req list.ListRequest, stream *list.ListResultsStream) {
	var config listModel
	if !r.Config(ctx, req, stream, &config) {
		return
	}
	all, err := r.Data.PersistentVolumes.All(ctx)
	if err != nil {
		listres.Fail(stream, "Listing PersistentVolumes failed", err.Error())
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
	listres.Stream(ctx, req, stream, volumes, listres.Results[*corev1.PersistentVolume]{
		DisplayName: displayName,
		Identity: func(ctx context.Context, pv *corev1.PersistentVolume, id *tfsdk.ResourceIdentity) diag.Diagnostics {
			return importmark.SetNameIdentity(ctx, id, pv.Name)
		},
		Imported: r.imported,
	})
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
	return listres.Imported(ctx, res, pv.Name, func(m *model, diags *diag.Diagnostics) {
		dir := (&Resource{data: r.Data}).statDir(ctx, nodeOf(pv), pv.Spec.Local.Path, diags)
		m.observed(pv, dir, true)
	})
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
