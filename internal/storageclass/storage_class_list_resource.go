package storageclass

import (
	"context"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/importmark"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/listres"
)

var _ list.ListResourceWithConfigure = &ListResource{}

// NewListResource returns the clusterstorage_storage_class list resource, for `terraform query`
// (Terraform 1.14+).
func NewListResource() list.ListResource {
	return &ListResource{listres.Base{TypeSuffix: "_storage_class", What: "StorageClasses"}}
}

// ListResource lists the cluster's StorageClasses, each with its identity and, with
// include_resource, the state an import of it records, so that `terraform query
// -generate-config-out` writes a configuration that plans no change.
type ListResource struct {
	listres.Base
}

type listModel struct {
	Provisioner types.String `tfsdk:"storage_provisioner"`
}

// ListResourceConfigSchema describes the list block's `config`.
func (r *ListResource) ListResourceConfigSchema(_ context.Context, _ list.ListResourceSchemaRequest, resp *list.ListResourceSchemaResponse) {
	resp.Schema = listres.Schema("Every StorageClass of the cluster, for `terraform query` (Terraform 1.14+): each with its identity, and with "+
		"`include_resource = true` the settings an import records, so that `terraform query -generate-config-out=generated.tf` writes "+
		"resource and import blocks that plan no change. A class a Helm release installed is listed with the release named in its "+
		"display name: managing it here too would fight the release.",
		map[string]listres.Filter{
			"storage_provisioner": {Description: "List only the classes of this provisioner, e.g. `kubernetes.io/no-provisioner` or `openebs.io/local` (default: every class)."},
		})
}

// List streams the classes, sorted by name, from the provider's snapshot of all classes (one
// LIST for the run).
func (r *ListResource) List(ctx context.Context, req list.ListRequest, stream *list.ListResultsStream) {
	var config listModel
	if !r.Config(ctx, req, stream, &config) {
		return
	}
	all, err := r.Data.StorageClasses.All(ctx)
	if err != nil {
		listres.Fail(stream, "Listing StorageClasses failed", err.Error())
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
	listres.Stream(ctx, req, stream, classes, listres.Results[*storagev1.StorageClass]{
		DisplayName: displayName,
		Identity: func(ctx context.Context, sc *storagev1.StorageClass, id *tfsdk.ResourceIdentity) diag.Diagnostics {
			return importmark.SetNameIdentity(ctx, id, sc.Name)
		},
		Imported: r.imported,
	})
}

// imported sets the result's resource to what an import of sc records: the state ImportState
// starts from (the id alone), observed as the Read after an import observes it.
func (r *ListResource) imported(ctx context.Context, sc *storagev1.StorageClass, res *list.ListResult) diag.Diagnostics {
	return listres.Imported(ctx, res, sc.Name, func(m *model, diags *diag.Diagnostics) {
		isDefault, err := soleDefault(ctx, r.Data.StorageClasses, sc)
		if err != nil {
			diags.AddError("Listing StorageClasses failed", err.Error())
			return
		}
		m.observed(sc, isDefault, true)
	})
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
