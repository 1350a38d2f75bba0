package provider_test

import (
	"context"
	"slices"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/provider"
)

// TestSchemas_identityAndList, through the provider server as Terraform calls it (no cluster):
// the schemas build without diagnostics (a list resource must be named as a resource with an
// identity), each resource has the identity the issue asks for, with the attributes an import
// block needs marked required, and the list resources are served.
func TestSchemas_identityAndList(t *testing.T) {
	ctx := context.Background()
	server, err := providerserver.NewProtocol6WithError(provider.New("test")())()
	if err != nil {
		t.Fatal(err)
	}
	schemas, err := server.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range schemas.Diagnostics {
		t.Errorf("GetProviderSchema: %s: %s", d.Summary, d.Detail)
	}
	for _, name := range []string{"clusterstorage_storage_backend", "clusterstorage_storage_class", "clusterstorage_local_pv"} {
		if schemas.ListResourceSchemas[name] == nil {
			t.Errorf("no list resource %s", name)
		}
	}
	ids, err := server.GetResourceIdentitySchemas(ctx, &tfprotov6.GetResourceIdentitySchemasRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ids.Diagnostics {
		t.Errorf("GetResourceIdentitySchemas: %s: %s", d.Summary, d.Detail)
	}
	for typ, want := range map[string]struct{ required, optional []string }{
		"clusterstorage_storage_backend":        {required: []string{"namespace", "release_name"}},
		"clusterstorage_storage_class":          {required: []string{"name"}},
		"clusterstorage_local_pv":               {required: []string{"name"}},
		"clusterstorage_volume_migration":       {required: []string{"claim", "namespace"}},
		"clusterstorage_k3s_data_dir_migration": {required: []string{"node", "target"}, optional: []string{"source", "switch_method"}},
	} {
		s := ids.IdentitySchemas[typ]
		if s == nil {
			t.Errorf("%s has no identity", typ)
			continue
		}
		var required, optional []string
		for _, a := range s.IdentityAttributes {
			switch {
			case a.RequiredForImport:
				required = append(required, a.Name)
			case a.OptionalForImport:
				optional = append(optional, a.Name)
			}
		}
		slices.Sort(required)
		slices.Sort(optional)
		if !slices.Equal(required, want.required) || !slices.Equal(optional, want.optional) {
			t.Errorf("%s identity: required %v optional %v, want %v and %v", typ, required, optional, want.required, want.optional)
		}
	}
}
