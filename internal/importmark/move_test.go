package importmark_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/importmark"
)

// byID is a resource imported by its id, as the provider's classes and volumes are.
type byID struct{}

func (byID) Metadata(context.Context, resource.MetadataRequest, *resource.MetadataResponse) {}
func (byID) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = testSchema
}
func (byID) Create(context.Context, resource.CreateRequest, *resource.CreateResponse) {}
func (byID) Read(context.Context, resource.ReadRequest, *resource.ReadResponse)       {}
func (byID) Update(context.Context, resource.UpdateRequest, *resource.UpdateResponse) {}
func (byID) Delete(context.Context, resource.DeleteRequest, *resource.DeleteResponse) {}
func (byID) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	importmark.ImportByID(ctx, req, resp)
}

var testSchema = schema.Schema{Attributes: map[string]schema.Attribute{
	"id":   schema.StringAttribute{Computed: true},
	"name": schema.StringAttribute{Optional: true},
}}

// testProvider serves byID as test_thing, movable from hashicorp/kubernetes's storage classes.
type testProvider struct{}

func (testProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "test"
}
func (testProvider) Schema(context.Context, provider.SchemaRequest, *provider.SchemaResponse) {}
func (testProvider) Configure(context.Context, provider.ConfigureRequest, *provider.ConfigureResponse) {
}
func (testProvider) DataSources(context.Context) []func() datasource.DataSource { return nil }
func (testProvider) Resources(context.Context) []func() resource.Resource {
	return []func() resource.Resource{func() resource.Resource { return movable{} }}
}

type movable struct{ byID }

func (movable) Metadata(_ context.Context, _ resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = "test_thing"
}

func (m movable) MoveState(context.Context) []resource.StateMover {
	return importmark.StateMovers(m, importmark.Source{Provider: "hashicorp/kubernetes", Type: "kubernetes_storage_class_v1",
		ID: func(s map[string]any) (string, error) { return importmark.StringAt(s, "metadata", "name") }})
}

// TestStateMovers, through the framework's MoveResourceState RPC: a move from the listed source
// (any registry host) imports the id its state names and marks the object imported; another
// provider's type of that name, or another type, is refused naming the sources there are; a
// source state without the id is an error that says to import instead.
func TestStateMovers(t *testing.T) {
	ctx := context.Background()
	server, err := providerserver.NewProtocol6WithError(testProvider{})()
	if err != nil {
		t.Fatal(err)
	}
	move := func(provider, typ, state string) (*tfprotov6.MoveResourceStateResponse, string) {
		resp, err := server.MoveResourceState(ctx, &tfprotov6.MoveResourceStateRequest{SourceProviderAddress: provider, SourceTypeName: typ,
			SourceSchemaVersion: 1, SourceState: &tfprotov6.RawState{JSON: []byte(state)}, TargetTypeName: "test_thing"})
		if err != nil {
			t.Fatal(err)
		}
		id := ""
		if resp.TargetState != nil {
			v, err := resp.TargetState.Unmarshal(testSchema.Type().TerraformType(ctx))
			if err != nil {
				t.Fatal(err)
			}
			var attrs map[string]tftypes.Value
			if err := v.As(&attrs); err == nil {
				_ = attrs["id"].As(&id)
			}
		}
		return resp, id
	}
	state := `{"id":"local-nvme","metadata":[{"name":"local-nvme","labels":{}}],"storage_provisioner":"kubernetes.io/no-provisioner"}`
	for _, host := range []string{"registry.terraform.io", "registry.opentofu.org"} {
		resp, id := move(host+"/hashicorp/kubernetes", "kubernetes_storage_class_v1", state)
		if len(resp.Diagnostics) > 0 || id != "local-nvme" || !strings.Contains(string(resp.TargetPrivate), "imported") {
			t.Errorf("%s: id %q, private %s, %v", host, id, resp.TargetPrivate, *resp.Diagnostics[0])
		}
	}
	for _, tc := range [][2]string{{"registry.terraform.io/example/kubernetes", "kubernetes_storage_class_v1"}, {"registry.terraform.io/hashicorp/kubernetes", "kubernetes_storage_class"}} {
		if resp, id := move(tc[0], tc[1], state); id != "" || len(resp.Diagnostics) == 0 || !strings.Contains(resp.Diagnostics[0].Detail, "takes over only hashicorp/kubernetes's kubernetes_storage_class_v1") {
			t.Errorf("%s %s: id %q %+v, want an error naming the sources", tc[0], tc[1], id, *resp.Diagnostics[0])
		}
	}
	resp, _ := move("registry.terraform.io/hashicorp/kubernetes", "kubernetes_storage_class_v1", `{"metadata":[]}`)
	if len(resp.Diagnostics) == 0 || !strings.Contains(resp.Diagnostics[0].Detail, "an `import` block") {
		t.Errorf("empty metadata: %+v, want an error that says to import", *resp.Diagnostics[0])
	}
}

func TestStringAt(t *testing.T) {
	s := map[string]any{"name": "openebs", "metadata": []any{map[string]any{"name": "pv1"}}, "empty": ""}
	for _, tc := range []struct {
		path []string
		want string
		ok   bool
	}{{[]string{"name"}, "openebs", true}, {[]string{"metadata", "name"}, "pv1", true}, {[]string{"empty"}, "", false}, {[]string{"namespace"}, "", false}, {[]string{"name", "x"}, "", false}} {
		got, err := importmark.StringAt(s, tc.path...)
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("%v: %q %v", tc.path, got, err)
		}
	}
}
