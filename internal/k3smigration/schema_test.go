package k3smigration

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/schemacheck"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/validate/validatetest"
)

func TestSchema(t *testing.T) {
	schemacheck.Resource(t, NewResource(), model{})
}

// The settings that only matter while migrating or restoring update in place: a change must not
// plan a replace (which would first move the data back with restore_on_destroy, then fail with
// "looks migrated already").
func TestSchema_createOnlySettingsUpdateInPlace(t *testing.T) {
	var resp resource.SchemaResponse
	(&Resource{}).Schema(context.Background(), resource.SchemaRequest{}, &resp)
	if resp.Diagnostics.HasError() {
		t.Fatal(resp.Diagnostics)
	}
	if diags := resp.Schema.ValidateImplementation(context.Background()); diags.HasError() {
		t.Fatal(diags)
	}
	for _, name := range []string{"drain", "keep_backup", "free_space_margin", "measure_write_speed", "config_file", "carry_mounts", "restore_on_destroy"} {
		switch a := resp.Schema.Attributes[name].(type) {
		case schema.BoolAttribute:
			if len(a.PlanModifiers) != 0 {
				t.Errorf("%s has plan modifiers (a replace): %v", name, a.PlanModifiers)
			}
		case schema.StringAttribute:
			if len(a.PlanModifiers) != 0 {
				t.Errorf("%s has plan modifiers (a replace): %v", name, a.PlanModifiers)
			}
		default:
			t.Errorf("%s: unexpected attribute %T", name, a)
		}
	}
}

func TestSchema_nodePaths(t *testing.T) {
	validatetest.ResourceNodePaths(t, NewResource(), "source", "target", "config_file")
}
