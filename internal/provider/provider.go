// Package provider holds the clusterstorage provider: its configuration schema, Configure (which
// builds the clients every resource shares) and the list of resources and data sources.
package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/resource"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/backend"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/benchmark"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/capacity"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/comparison"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/k3smigration"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/localpv"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/providerdata"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/storageclass"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/tfconv"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/volumemigration"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/volumes"
)

var (
	_ provider.Provider                  = &Provider{}
	_ provider.ProviderWithListResources = &Provider{}
)

// New returns a constructor for the provider at the given version, as providerserver expects.
func New(version string) func() provider.Provider {
	return func() provider.Provider {
		return &Provider{version: version}
	}
}

// Provider is the clusterstorage provider.
type Provider struct {
	version string
}

// Metadata sets the provider's type name, the prefix of every resource type.
func (p *Provider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "clusterstorage"
	resp.Version = p.version
}

// Schema describes the provider block.
func (p *Provider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = providerSchema()
}

// Configure reads the provider block and hands the shared clients to resources and data sources.
// The Kubernetes client itself is built on first use, and ssh or nodes not known yet only make
// node access wait, so that a cluster created in the same apply does not fail the plan.
func (p *Provider) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	cfg := req.Config
	pending := tfconv.Pending(&cfg.Raw, &resp.Diagnostics, "ssh", "nodes")
	var config providerModel
	resp.Diagnostics.Append(cfg.Get(ctx, &config)...)
	if resp.Diagnostics.HasError() {
		return
	}
	clients := config.kubeClients(ctx, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	nodes := config.nodeAccess(pending, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	data := providerdata.New(clients, nodes)
	resp.ResourceData = data
	resp.DataSourceData = data
	resp.ListResourceData = data
}

// Resources lists the provider's resource types.
func (p *Provider) Resources(_ context.Context) []func() resource.Resource {
	return []func() resource.Resource{
		storageclass.NewResource,
		localpv.NewResource,
		k3smigration.NewResource,
		backend.NewResource,
		volumemigration.NewResource,
	}
}

// ListResources lists the provider's list resources, for `terraform query` (Terraform 1.14+).
func (p *Provider) ListResources(_ context.Context) []func() list.ListResource {
	return []func() list.ListResource{
		backend.NewListResource,
		storageclass.NewListResource,
		localpv.NewListResource,
	}
}

// DataSources lists the provider's data sources.
func (p *Provider) DataSources(_ context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{
		benchmark.NewDataSource,
		comparison.NewDataSource,
		capacity.NewDataSource,
		volumes.NewDataSource,
	}
}
