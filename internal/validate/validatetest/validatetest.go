// Package validatetest checks that a schema's attributes carry the shared validators of package
// validate, without a cluster. It is imported only by tests.
package validatetest

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/validate"
)

// ResourceNodePaths checks that every attribute of r's schema named in attrs carries
// validate.NodePath, and that every configurable string attribute named `path` or `*_path` is
// named in attrs, so a new path attribute without the validator fails `go test`. An attribute is
// named with dots through nested attributes, across maps and lists of nested objects:
// `path`, `backend.base_path`, `targets.node_path`.
func ResourceNodePaths(t testing.TB, r resource.Resource, attrs ...string) {
	t.Helper()
	ctx := context.Background()
	resp := &resource.SchemaResponse{}
	r.Schema(ctx, resource.SchemaRequest{}, resp)
	if resp.Diagnostics.HasError() {
		t.Fatalf("building the schema: %v", resp.Diagnostics)
	}
	nodePaths(t, resp.Schema.Type(), func(p path.Path) (any, diag.Diagnostics) { return resp.Schema.AttributeAtPath(ctx, p) }, attrs)
}

// DataSourceNodePaths is ResourceNodePaths for a data source.
func DataSourceNodePaths(t testing.TB, d datasource.DataSource, attrs ...string) {
	t.Helper()
	ctx := context.Background()
	resp := &datasource.SchemaResponse{}
	d.Schema(ctx, datasource.SchemaRequest{}, resp)
	if resp.Diagnostics.HasError() {
		t.Fatalf("building the schema: %v", resp.Diagnostics)
	}
	nodePaths(t, resp.Schema.Type(), func(p path.Path) (any, diag.Diagnostics) { return resp.Schema.AttributeAtPath(ctx, p) }, attrs)
}

// attribute is what a resource's and a data source's string attributes have alike here.
type attribute interface {
	IsRequired() bool
	IsOptional() bool
}

type stringAttribute interface {
	StringValidators() []validator.String
}

var nodePathType = reflect.TypeOf(validate.NodePath())

func nodePaths(t testing.TB, typ attr.Type, at func(path.Path) (any, diag.Diagnostics), attrs []string) {
	t.Helper()
	leaves := map[string]path.Path{}
	walk(typ, "", path.Empty(), leaves)
	for _, name := range attrs {
		p, ok := leaves[name]
		if !ok {
			t.Errorf("the schema has no attribute %s", name)
			continue
		}
		a, diags := at(p)
		if diags.HasError() {
			t.Errorf("attribute %s: %v", name, diags)
			continue
		}
		s, ok := a.(stringAttribute)
		if !ok {
			t.Errorf("attribute %s is a %T, not a string attribute", name, a)
			continue
		}
		if !slices.ContainsFunc(s.StringValidators(), func(v validator.String) bool { return reflect.TypeOf(v) == nodePathType }) {
			t.Errorf("attribute %s names a path on a node or in a volume but has no validate.NodePath() among its validators", name)
		}
	}
	for name, p := range leaves {
		if last := name[strings.LastIndex(name, ".")+1:]; slices.Contains(attrs, name) || last != "path" && !strings.HasSuffix(last, "_path") {
			continue
		}
		a, diags := at(p)
		if diags.HasError() {
			continue
		}
		if c, ok := a.(attribute); ok && (c.IsRequired() || c.IsOptional()) {
			if _, ok := a.(stringAttribute); ok {
				t.Errorf("configurable attribute %s looks like a path: give it validate.NodePath() and name it here, or rename it", name)
			}
		}
	}
}

// walk records the path of every attribute below typ by its dotted name, crossing objects and
// maps and lists of objects (with a made-up key or index: the schema is the same for every one).
func walk(typ attr.Type, name string, p path.Path, out map[string]path.Path) {
	obj, ok := typ.(basetypes.ObjectType)
	if !ok {
		return
	}
	for k, elem := range obj.AttrTypes {
		n, q := k, p.AtName(k)
		if name != "" {
			n = name + "." + k
		}
		out[n] = q
		switch e := elem.(type) {
		case basetypes.ObjectType:
			walk(e, n, q, out)
		case basetypes.MapType:
			walk(e.ElemType, n, q.AtMapKey("k"), out)
		case basetypes.ListType:
			walk(e.ElemType, n, q.AtListIndex(0), out)
		}
	}
}
