package listres_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/path"
	rschema "github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/importmark"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/listres"
)

var pathName = path.Root("name")

type model struct {
	ID   types.String `tfsdk:"id"`
	Size types.Int64  `tfsdk:"size"`
}

// request is a list request for a resource of an id and a size, identified by name.
func request(include bool, limit int64) list.ListRequest {
	return list.ListRequest{
		IncludeResource: include,
		Limit:           limit,
		ResourceSchema: rschema.Schema{Attributes: map[string]rschema.Attribute{
			"id":   rschema.StringAttribute{Computed: true},
			"size": rschema.Int64Attribute{Optional: true},
		}},
		ResourceIdentitySchema: importmark.NameIdentitySchema("thing"),
	}
}

type item struct {
	name    string
	size    int64
	foreign bool // not offered for import
	broken  bool // its import fails
}

func results() listres.Results[item] {
	return listres.Results[item]{
		DisplayName: func(it item) string { return it.name + " (thing)" },
		Identity: func(ctx context.Context, it item, id *tfsdk.ResourceIdentity) diag.Diagnostics {
			return importmark.SetNameIdentity(ctx, id, it.name)
		},
		Imported: func(ctx context.Context, it item, res *list.ListResult) diag.Diagnostics {
			return listres.Imported(ctx, res, it.name, func(m *model, diags *diag.Diagnostics) {
				if it.broken {
					diags.AddError("Cannot import "+it.name, "broken")
					return
				}
				m.Size = types.Int64Value(it.size)
			})
		},
		NotOffered: func(_ context.Context, it item, diags *diag.Diagnostics) (string, string) {
			diags.AddWarning("checked "+it.name, "a warning of the check, dropped with the result")
			if it.foreign {
				return "Not offered for import: " + it.name, "managed elsewhere"
			}
			return "", ""
		},
	}
}

func collect(t *testing.T, req list.ListRequest, items []item) []list.ListResult {
	t.Helper()
	var stream list.ListResultsStream
	listres.Stream(context.Background(), req, &stream, items, results())
	var out []list.ListResult
	for res := range stream.Results {
		out = append(out, res)
	}
	return out
}

// TestStream: each item is a result with its display name and identity, in order; an item not
// offered for import is a warning alone and does not count against the limit; the limit stops
// the stream; without include_resource no resource is set.
func TestStream(t *testing.T) {
	items := []item{{name: "a", size: 1}, {name: "x", foreign: true}, {name: "b", size: 2}, {name: "c", size: 3}}
	got := collect(t, request(false, 2), items)
	var names []string
	for _, res := range got {
		if res.DisplayName == "" {
			if len(res.Diagnostics) != 1 || res.Diagnostics[0].Summary() != "Not offered for import: x" || res.Diagnostics.HasError() {
				t.Errorf("the result of a foreign item has %v, want its warning alone", res.Diagnostics)
			}
			names = append(names, "warning")
			continue
		}
		var name types.String
		if d := res.Identity.GetAttribute(context.Background(), pathName, &name); d.HasError() {
			t.Fatal(d)
		}
		names = append(names, res.DisplayName+"="+name.ValueString())
		if !res.Resource.Raw.IsNull() {
			t.Errorf("%s: a resource without include_resource: %v", res.DisplayName, res.Resource.Raw)
		}
	}
	if want := "a (thing)=a,warning,b (thing)=b"; strings.Join(names, ",") != want {
		t.Errorf("results %s, want %s", strings.Join(names, ","), want)
	}
	if n := len(collect(t, request(false, 0), items)); n != 4 {
		t.Errorf("no limit: %d results, want 4", n)
	}
}

// TestStream_includeResource: with include_resource a result carries what an import records:
// the id, then the type's observation; an import that fails is an error on its result alone.
func TestStream_includeResource(t *testing.T) {
	got := collect(t, request(true, 0), []item{{name: "a", size: 7}, {name: "b", broken: true}})
	if len(got) != 2 {
		t.Fatalf("%d results, want 2", len(got))
	}
	var m model
	if d := got[0].Resource.Get(context.Background(), &m); d.HasError() {
		t.Fatal(d)
	}
	if m.ID.ValueString() != "a" || m.Size.ValueInt64() != 7 {
		t.Errorf("the imported state is %v, want id a, size 7", m)
	}
	if !got[1].Diagnostics.HasError() || got[0].Diagnostics.HasError() {
		t.Errorf("diagnostics %v and %v, want an error on b's only", got[0].Diagnostics, got[1].Diagnostics)
	}
}

// TestConfig: a list before the provider's Configure ends with an error naming what is listed.
func TestConfig(t *testing.T) {
	b := listres.Base{TypeSuffix: "_thing", What: "things"}
	schema := listres.Schema("Things.", map[string]listres.Filter{"kind": {Description: "Only things of this kind."}})
	ctx := context.Background()
	req := list.ListRequest{Config: tfsdk.Config{Schema: schema, Raw: tftypes.NewValue(schema.Type().TerraformType(ctx),
		map[string]tftypes.Value{"kind": tftypes.NewValue(tftypes.String, nil)})}}
	var stream list.ListResultsStream
	var cfg struct {
		Kind types.String `tfsdk:"kind"`
	}
	if b.Config(ctx, req, &stream, &cfg) {
		t.Fatal("Config went on without the provider's data")
	}
	for res := range stream.Results {
		if !res.Diagnostics.HasError() || !strings.Contains(res.Diagnostics[len(res.Diagnostics)-1].Detail(), "before listing things") {
			t.Errorf("diagnostics %v, want the provider check naming things", res.Diagnostics)
		}
	}
}
