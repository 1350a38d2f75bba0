package benchmark

import (
	"context"
	"reflect"
	"sort"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
)

// The comparison's schema is valid, and its models' tfsdk tags are exactly its attributes.
func TestComparisonSchema(t *testing.T) {
	ctx := context.Background()
	var resp datasource.SchemaResponse
	(&ComparisonDataSource{}).Schema(ctx, datasource.SchemaRequest{}, &resp)
	if diags := resp.Schema.ValidateImplementation(ctx); diags.HasError() {
		t.Fatalf("schema: %v", diags)
	}
	attrs := resp.Schema.Attributes
	sameKeys(t, "comparison", attrs, comparisonModel{})
	targets := attrs["targets"].(schema.MapNestedAttribute).NestedObject.Attributes //nolint:forcetypeassert // the test fails on a panic
	sameKeys(t, "targets", targets, comparisonTargetModel{})
	results := attrs["results"].(schema.MapNestedAttribute).NestedObject.Attributes //nolint:forcetypeassert // the test fails on a panic
	sameKeys(t, "results", results, comparisonResultModel{})
	spreadAttrs := results["spread"].(schema.SingleNestedAttribute).Attributes //nolint:forcetypeassert // the test fails on a panic
	sameKeys(t, "spread", spreadAttrs, spreadModel{})
	for _, f := range figures {
		if _, ok := spreadAttrs[f.Key]; !ok {
			t.Errorf("spread lacks figure %s", f.Key)
		}
	}

	var bench datasource.SchemaResponse
	(&DataSource{}).Schema(ctx, datasource.SchemaRequest{}, &bench)
	if diags := bench.Schema.ValidateImplementation(ctx); diags.HasError() {
		t.Fatalf("benchmark schema: %v", diags)
	}
	if _, ok := bench.Schema.Attributes["rounds"]; !ok {
		t.Error("benchmark has no rounds")
	}
	sameKeys(t, "benchmark spread", bench.Schema.Attributes["spread"].(schema.SingleNestedAttribute).Attributes, spreadModel{}) //nolint:forcetypeassert // the test fails on a panic
}

func sameKeys(t *testing.T, what string, attrs map[string]schema.Attribute, model any) {
	t.Helper()
	var tags []string
	rt := reflect.TypeOf(model)
	for i := range rt.NumField() {
		tags = append(tags, rt.Field(i).Tag.Get("tfsdk"))
	}
	var keys []string
	for k := range attrs {
		keys = append(keys, k)
	}
	sort.Strings(tags)
	sort.Strings(keys)
	if !reflect.DeepEqual(tags, keys) {
		t.Errorf("%s: model tags %v, schema attributes %v", what, tags, keys)
	}
}
