package acctest

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	tfresource "github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
)

// FactoriesWith returns ProviderFactories plus a stand-in for another provider (name is the
// last segment of its address: "helm" serves as hashicorp/helm) with the given resources, for the
// tests of `moved` blocks from that provider's resources into this provider's. The stand-in has
// no configuration of its own; each test documents what its resources share with the real ones.
func FactoriesWith(name string, resources ...func() resource.Resource) map[string]func() (tfprotov6.ProviderServer, error) {
	out := map[string]func() (tfprotov6.ProviderServer, error){
		name: providerserver.NewProtocol6WithError(&standIn{name: name, resources: resources}),
	}
	for n, f := range ProviderFactories {
		out[n] = f
	}
	return out
}

type standIn struct {
	name      string
	resources []func() resource.Resource
}

var _ provider.Provider = &standIn{}

func (p *standIn) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = p.name
}

func (p *standIn) Schema(context.Context, provider.SchemaRequest, *provider.SchemaResponse) {}

func (p *standIn) Configure(context.Context, provider.ConfigureRequest, *provider.ConfigureResponse) {
}

func (p *standIn) DataSources(context.Context) []func() datasource.DataSource { return nil }

func (p *standIn) Resources(context.Context) []func() resource.Resource { return p.resources }

// CheckMovedAway fails when the resource at address from is still in state: after a `moved`
// block, only its destination may be.
func CheckMovedAway(from string) tfresource.TestCheckFunc {
	return func(s *terraform.State) error {
		if _, ok := s.RootModule().Resources[from]; ok {
			return fmt.Errorf("%s is still in state after the move", from)
		}
		return nil
	}
}
