package comparison

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/benchmark"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/schemacheck"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/validate/validatetest"
)

// The comparison's schema is valid, its models' tfsdk tags are exactly its attributes at every
// level (targets, results, spread), and its spread has every figure.
func TestSchema(t *testing.T) {
	schemacheck.DataSource(t, &DataSource{}, model{})

	var resp datasource.SchemaResponse
	(&DataSource{}).Schema(context.Background(), datasource.SchemaRequest{}, &resp)
	results := resp.Schema.Attributes["results"].(schema.MapNestedAttribute).NestedObject.Attributes //nolint:forcetypeassert // the test fails on a panic
	spreadAttrs := results["spread"].(schema.SingleNestedAttribute).Attributes                       //nolint:forcetypeassert // the test fails on a panic
	for _, f := range benchmark.Figures {
		if _, ok := spreadAttrs[f.Key]; !ok {
			t.Errorf("spread lacks figure %s", f.Key)
		}
	}
}

func TestSchema_nodePaths(t *testing.T) {
	validatetest.DataSourceNodePaths(t, &DataSource{}, "targets.node_path")
}
