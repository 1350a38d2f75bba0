// Package schemacheck checks a resource's or data source's schema without a cluster: the
// framework's implementation validation, and the model's tfsdk tags against the attributes. It is
// imported only by tests.
package schemacheck

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// Resource builds r's schema, runs the framework's implementation validation on it
// (what the provider server does at startup: defaults matching types, plan modifiers allowed on
// the attribute, ...), and checks that model, the struct r reads its state into, has a `tfsdk` tag
// for every attribute and block and an attribute or block for every tag, at every nesting level.
// It needs no cluster: a renamed attribute breaks `go test` before any acceptance run.
func Resource(t testing.TB, r resource.Resource, model any) {
	t.Helper()
	resp := &resource.SchemaResponse{}
	r.Schema(context.Background(), resource.SchemaRequest{}, resp)
	check(t, resp.Schema, resp.Diagnostics, model, func(ctx context.Context, raw tftypes.Value, target any) diag.Diagnostics {
		return tfsdk.State{Schema: resp.Schema, Raw: raw}.Get(ctx, target)
	})
}

// DataSource is Resource for a data source.
func DataSource(t testing.TB, d datasource.DataSource, model any) {
	t.Helper()
	resp := &datasource.SchemaResponse{}
	d.Schema(context.Background(), datasource.SchemaRequest{}, resp)
	check(t, resp.Schema, resp.Diagnostics, model, func(ctx context.Context, raw tftypes.Value, target any) diag.Diagnostics {
		return tfsdk.Config{Schema: resp.Schema, Raw: raw}.Get(ctx, target)
	})
}

// anySchema is what a resource's and a data source's schema have alike.
type anySchema interface {
	Type() attr.Type
	ValidateImplementation(ctx context.Context) diag.Diagnostics
}

// check is Resource and DataSource once the schema is built (with diagnostics built): get reads
// a raw value of the schema's type into target, as the State or Config of a CRUD call does.
func check(t testing.TB, s anySchema, built diag.Diagnostics, model any, get func(ctx context.Context, raw tftypes.Value, target any) diag.Diagnostics) {
	t.Helper()
	ctx := context.Background()
	if built.HasError() {
		t.Fatalf("building the schema: %v", built)
	}
	if diags := s.ValidateImplementation(ctx); diags.HasError() {
		t.Fatalf("the schema fails the framework's implementation validation: %v", diags)
	}
	typ := s.Type().TerraformType(ctx)
	checkModel(t, typ, model)
	raw := nullAttributes(t, typ)
	checkGet(t, model, func(target any) error {
		if diags := get(ctx, raw, target); diags.HasError() {
			return diagsError(diags.Errors()[0].Summary() + ": " + diags.Errors()[0].Detail())
		}
		return nil
	})
}

type diagsError string

func (e diagsError) Error() string { return string(e) }

// checkModel compares the attribute names of typ with the tags of model's struct type.
func checkModel(t testing.TB, typ tftypes.Type, model any) {
	t.Helper()
	rt := reflect.TypeOf(model)
	for rt.Kind() == reflect.Pointer {
		rt = rt.Elem()
	}
	obj, ok := typ.(tftypes.Object)
	if !ok || rt.Kind() != reflect.Struct {
		t.Fatalf("want an object schema and a struct model, got %s and %s", typ, rt)
	}
	compare(t, "", obj, rt)
}

var attrValue = reflect.TypeFor[attr.Value]()

// compare checks one object level and recurses into nested objects the model holds as structs.
func compare(t testing.TB, where string, obj tftypes.Object, rt reflect.Type) {
	t.Helper()
	fields := tagged(rt)
	var names []string
	for name := range obj.AttributeTypes {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		f, ok := fields[name]
		if !ok {
			t.Errorf("attribute %s%s has no field with tag `tfsdk:%q` in %s", where, name, name, rt)
			continue
		}
		nested, elem := nestedObject(obj.AttributeTypes[name]), structType(f.Type)
		if nested != nil && elem != nil {
			compare(t, where+name+".", *nested, elem)
		}
	}
	for name, f := range fields {
		if _, ok := obj.AttributeTypes[name]; !ok {
			t.Errorf("field %s.%s has tag `tfsdk:%q`, but the schema has no attribute %s%s", rt, f.Name, name, where, name)
		}
	}
}

// tagged returns the fields of struct type rt by tfsdk tag, with those of embedded structs.
func tagged(rt reflect.Type) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	for i := range rt.NumField() {
		f := rt.Field(i)
		tag, ok := f.Tag.Lookup("tfsdk")
		switch {
		case f.Anonymous && !ok && f.Type.Kind() == reflect.Struct:
			for k, v := range tagged(f.Type) {
				out[k] = v
			}
		case ok && tag != "-":
			out[strings.Split(tag, ",")[0]] = f
		}
	}
	return out
}

// nestedObject returns the object type of a nested attribute or block (single, list, set, map).
func nestedObject(typ tftypes.Type) *tftypes.Object {
	switch v := typ.(type) {
	case tftypes.Object:
		return &v
	case tftypes.List:
		return nestedObject(v.ElementType)
	case tftypes.Set:
		return nestedObject(v.ElementType)
	case tftypes.Map:
		return nestedObject(v.ElementType)
	}
	return nil
}

// structType returns the struct a field holds (directly, by pointer, or as slice or map
// elements), or nil for framework value types (types.String, types.Object, timeouts.Value...).
func structType(rt reflect.Type) reflect.Type {
	for {
		if rt.Implements(attrValue) || reflect.PointerTo(rt).Implements(attrValue) {
			return nil
		}
		switch rt.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Map:
			rt = rt.Elem()
		case reflect.Struct:
			return rt
		default:
			return nil
		}
	}
}

// nullAttributes is an object of typ with every attribute null.
func nullAttributes(t testing.TB, typ tftypes.Type) tftypes.Value {
	t.Helper()
	obj, ok := typ.(tftypes.Object)
	if !ok {
		t.Fatalf("the schema type is %s, not an object", typ)
	}
	vals := map[string]tftypes.Value{}
	for name, at := range obj.AttributeTypes {
		vals[name] = tftypes.NewValue(at, nil)
	}
	return tftypes.NewValue(obj, vals)
}

// checkGet reads a value with every attribute null into a new model, as the framework does in
// every CRUD call: a field whose type cannot hold its attribute fails here.
func checkGet(t testing.TB, model any, get func(target any) error) {
	t.Helper()
	rt := reflect.TypeOf(model)
	for rt.Kind() == reflect.Pointer {
		rt = rt.Elem()
	}
	target := reflect.New(rt).Interface()
	if err := get(target); err != nil {
		t.Errorf("reading a value into %s: %v", rt, err)
	}
}
