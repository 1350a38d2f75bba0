// Package volumes implements the clusterstorage_volumes data source, and holds the inventory
// of claims and the workloads that mount them that clusterstorage_volume_migration shares
// (inventory.go, volume.go and list.go use no Terraform types).
package volumes

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/providerdata"
)

var (
	_ datasource.DataSourceWithConfigure      = &DataSource{}
	_ datasource.DataSourceWithValidateConfig = &DataSource{}
)

// NewDataSource returns the clusterstorage_volumes data source.
func NewDataSource() datasource.DataSource {
	return &DataSource{}
}

// DataSource lists claims with their volumes and workloads.
type DataSource struct {
	data *providerdata.Data
}

// Metadata sets the type name.
func (d *DataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_volumes"
}

// Configure receives the provider's shared clients.
func (d *DataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.data = providerdata.From(req.ProviderData, &resp.Diagnostics)
}

// ValidateConfig checks the label selector's syntax at plan time.
func (d *DataSource) ValidateConfig(ctx context.Context, req datasource.ValidateConfigRequest, resp *datasource.ValidateConfigResponse) {
	var sel types.String
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("label_selector"), &sel)...)
	if resp.Diagnostics.HasError() || sel.IsNull() || sel.IsUnknown() {
		return
	}
	if _, err := labels.Parse(sel.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("label_selector"), "Invalid label selector",
			"label_selector must be a selector in kubectl -l syntax, such as `app=db,tier!=cache`: "+err.Error())
	}
}

// Read lists the claims.
func (d *DataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m model
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	client := d.data.KubeClient(&resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	f := m.filter()
	tflog.Debug(ctx, "listing claims", map[string]any{"filter": f.id()})
	vols, err := List(ctx, client, f)
	if err != nil {
		resp.Diagnostics.AddError("Listing volumes failed", err.Error())
		return
	}
	m.ID = types.StringValue(f.id())
	m.Volumes = make([]volumeModel, 0, len(vols))
	for _, v := range vols {
		m.Volumes = append(m.Volumes, v.model())
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}
