// Package tfconv converts between Terraform framework values and the plain Go values the
// Kubernetes API uses, with the rules every resource here shares: labels and annotations are
// managed per key, and an empty collection stays null when the configuration left it out.
package tfconv

import (
	"context"
	"maps"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// StringMap returns the elements of a known map; null or unknown gives nil.
func StringMap(ctx context.Context, v types.Map, diags *diag.Diagnostics) map[string]string {
	if v.IsNull() || v.IsUnknown() {
		return nil
	}
	out := map[string]string{}
	diags.Append(v.ElementsAs(ctx, &out, false)...)
	return out
}

// StringList returns the elements of a known list; null or unknown gives nil.
func StringList(ctx context.Context, v types.List, diags *diag.Diagnostics) []string {
	if v.IsNull() || v.IsUnknown() {
		return nil
	}
	var out []string
	diags.Append(v.ElementsAs(ctx, &out, false)...)
	return out
}

// StringSet returns the elements of a known set; null or unknown gives nil.
func StringSet(ctx context.Context, v types.Set, diags *diag.Diagnostics) []string {
	if v.IsNull() || v.IsUnknown() {
		return nil
	}
	var out []string
	diags.Append(v.ElementsAs(ctx, &out, false)...)
	return out
}

// Map converts a live map to a Terraform map, keeping only the keys in managed unless all is set
// (an import adopts every key). An empty result is null when the prior value was null, so an
// attribute left out of the configuration does not flip between null and {}.
func Map(live map[string]string, managed types.Map, all bool) types.Map {
	keep := managed.Elements()
	elements := map[string]attr.Value{}
	for k, v := range live {
		if _, ok := keep[k]; all || ok {
			elements[k] = types.StringValue(v)
		}
	}
	if len(elements) == 0 && managed.IsNull() {
		return types.MapNull(types.StringType)
	}
	return types.MapValueMust(types.StringType, elements)
}

// List converts a live list to a Terraform list; an empty one stays null when prior was null.
func List(live []string, prior types.List) types.List {
	if len(live) == 0 && prior.IsNull() {
		return types.ListNull(types.StringType)
	}
	elements := make([]attr.Value, 0, len(live))
	for _, v := range live {
		elements = append(elements, types.StringValue(v))
	}
	return types.ListValueMust(types.StringType, elements)
}

// Set converts live values to a Terraform set of strings.
func Set(live []string) types.Set {
	elements := make([]attr.Value, 0, len(live))
	for _, v := range live {
		elements = append(elements, types.StringValue(v))
	}
	return types.SetValueMust(types.StringType, elements)
}

// MergeManaged returns live with the keys previously managed removed and desired written over it,
// leaving keys that other tools own alone. An empty result is nil.
func MergeManaged(live, previous, desired map[string]string) map[string]string {
	out := maps.Clone(live)
	if out == nil {
		out = map[string]string{}
	}
	for k := range previous {
		delete(out, k)
	}
	maps.Copy(out, desired)
	if len(out) == 0 {
		return nil
	}
	return out
}

// Pending is for models whose nested attributes are Go structs, slices or maps of structs, which
// cannot hold an unknown value. At plan, and in every `terraform validate`, a nested attribute
// built by an expression over values computed during apply (a for over a resource's outputs or
// over a variable) is unknown as a whole or in part. Pending sets to null, in *raw (a Config's or
// Plan's Raw), each named top-level attribute that is or holds an unknown object or collection of
// objects, so that the rest still reads into the model, and returns the named attributes that are
// not wholly known: checks that need them wait until they are known (during apply, Terraform
// validates and plans again with known values).
func Pending(raw *tftypes.Value, diags *diag.Diagnostics, names ...string) []string {
	if raw.IsNull() || !raw.IsKnown() {
		return nil
	}
	var shared map[string]tftypes.Value
	if err := raw.As(&shared); err != nil {
		diags.AddError("Cannot read the configuration", err.Error()+". This is a bug in the provider; please report it.")
		return nil
	}
	attrs := maps.Clone(shared) // As hands out the value's own map, which the request's other copies share
	var pending []string
	for _, name := range names {
		v, ok := attrs[name]
		if !ok || v.IsFullyKnown() {
			continue
		}
		pending = append(pending, name)
		if !structReadable(v) {
			attrs[name] = tftypes.NewValue(v.Type(), nil)
		}
	}
	if len(pending) > 0 {
		*raw = tftypes.NewValue(raw.Type(), attrs)
	}
	return pending
}

// structReadable reports whether v reads into Go structs: no object, and no collection of
// objects, in it is unknown (unknown strings, numbers and lists of them go into types values).
func structReadable(v tftypes.Value) bool {
	if !v.IsKnown() {
		return !holdsObject(v.Type())
	}
	if v.IsNull() {
		return true
	}
	var children []tftypes.Value
	switch v.Type().(type) {
	case tftypes.Object, tftypes.Map:
		m := map[string]tftypes.Value{}
		if v.As(&m) != nil {
			return false
		}
		for _, c := range m {
			children = append(children, c)
		}
	case tftypes.List, tftypes.Set, tftypes.Tuple:
		if v.As(&children) != nil {
			return false
		}
	}
	for _, c := range children {
		if !structReadable(c) {
			return false
		}
	}
	return true
}

func holdsObject(t tftypes.Type) bool {
	switch t := t.(type) {
	case tftypes.Object:
		return true
	case tftypes.List:
		return holdsObject(t.ElementType)
	case tftypes.Set:
		return holdsObject(t.ElementType)
	case tftypes.Map:
		return holdsObject(t.ElementType)
	}
	return false
}
