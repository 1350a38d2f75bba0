package validatetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/validate"
)

type fakeResource struct{ resource.Resource }

func (fakeResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	with := []validator.String{validate.DNSSubdomain(), validate.NodePath()}
	resp.Schema = schema.Schema{Attributes: map[string]schema.Attribute{
		"path":          schema.StringAttribute{Required: true, Validators: with},
		"resolved_path": schema.StringAttribute{Computed: true},
		"name":          schema.StringAttribute{Optional: true},
		"hostpath_name": schema.StringAttribute{Optional: true},
		"pathless":      schema.StringAttribute{Optional: true},
		"targets": schema.MapNestedAttribute{Optional: true, NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
			"node_path": schema.StringAttribute{Optional: true, Validators: with},
			"base_path": schema.StringAttribute{Optional: true},
		}}},
		"backend": schema.SingleNestedAttribute{Optional: true, Attributes: map[string]schema.Attribute{
			"data_path": schema.StringAttribute{Optional: true},
		}},
	}}
}

// recorder keeps the errors a check reports instead of failing the test.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) { r.Errorf(format, args...) }

func TestResourceNodePaths(t *testing.T) {
	r := &recorder{TB: t}
	ResourceNodePaths(r, fakeResource{}, "path", "targets.node_path", "name", "backend.data_path", "nope")
	slices.Sort(r.errors)
	want := []string{
		"attribute backend.data_path names a path on a node or in a volume but has no validate.NodePath()",
		"attribute name names a path on a node or in a volume but has no validate.NodePath()",
		"configurable attribute targets.base_path looks like a path",
		"the schema has no attribute nope",
	}
	if len(r.errors) != len(want) {
		t.Fatalf("errors:\n%s\nwant %d", strings.Join(r.errors, "\n"), len(want))
	}
	for i, w := range want {
		if !strings.Contains(r.errors[i], w) {
			t.Errorf("error %q, want %q", r.errors[i], w)
		}
	}
}
