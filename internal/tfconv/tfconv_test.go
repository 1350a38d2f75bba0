package tfconv

import (
	"maps"
	"slices"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

func TestMergeManaged(t *testing.T) {
	live := map[string]string{"ours": "old", "dropped": "x", "theirs": "keep"}
	got := MergeManaged(live, map[string]string{"ours": "old", "dropped": "x"}, map[string]string{"ours": "new"})
	want := map[string]string{"ours": "new", "theirs": "keep"}
	if !maps.Equal(got, want) {
		t.Errorf("MergeManaged = %v, want %v", got, want)
	}
	if got := MergeManaged(map[string]string{"a": "1"}, map[string]string{"a": "1"}, nil); got != nil {
		t.Errorf("MergeManaged of nothing left = %v, want nil", got)
	}
	if live["ours"] != "old" {
		t.Error("MergeManaged changed its input")
	}
}

func TestMap(t *testing.T) {
	live := map[string]string{"ours": "v", "theirs": "w"}
	managed := types.MapValueMust(types.StringType, map[string]attr.Value{"ours": types.StringValue("old")})

	if got := Map(live, managed, false); len(got.Elements()) != 1 || got.Elements()["ours"] != types.StringValue("v") {
		t.Errorf("Map(managed) = %v, want only ours=v", got)
	}
	if got := Map(live, types.MapNull(types.StringType), true); len(got.Elements()) != 2 {
		t.Errorf("Map(all) = %v, want both keys", got)
	}
	if got := Map(live, types.MapNull(types.StringType), false); !got.IsNull() {
		t.Errorf("Map with nothing managed and null prior = %v, want null", got)
	}
	empty := types.MapValueMust(types.StringType, map[string]attr.Value{})
	if got := Map(nil, empty, false); got.IsNull() || len(got.Elements()) != 0 {
		t.Errorf("Map with an empty prior = %v, want {}", got)
	}
}

func TestList(t *testing.T) {
	if got := List(nil, types.ListNull(types.StringType)); !got.IsNull() {
		t.Errorf("List(nil, null) = %v, want null", got)
	}
	empty := types.ListValueMust(types.StringType, []attr.Value{})
	if got := List(nil, empty); got.IsNull() {
		t.Error("List(nil, []) is null, want []")
	}
	if got := List([]string{"a", "b"}, empty); len(got.Elements()) != 2 {
		t.Errorf("List = %v", got)
	}
}

func TestPending(t *testing.T) {
	entry := tftypes.Object{AttributeTypes: map[string]tftypes.Type{"name": tftypes.String, "values": tftypes.List{ElementType: tftypes.String}}}
	entries := tftypes.List{ElementType: entry}
	config := tftypes.Object{AttributeTypes: map[string]tftypes.Type{"name": tftypes.String, "set": entries, "one": entry}}
	str := func(s string) tftypes.Value { return tftypes.NewValue(tftypes.String, s) }
	unknownString := tftypes.NewValue(tftypes.String, tftypes.UnknownValue)
	known := tftypes.NewValue(entry, map[string]tftypes.Value{"name": str("a"), "values": tftypes.NewValue(tftypes.List{ElementType: tftypes.String}, []tftypes.Value{str("x")})})
	partly := tftypes.NewValue(entry, map[string]tftypes.Value{"name": unknownString, "values": tftypes.NewValue(tftypes.List{ElementType: tftypes.String}, tftypes.UnknownValue)})
	cases := map[string]struct {
		set, one      tftypes.Value
		pending, null []string
	}{
		"known":                {tftypes.NewValue(entries, []tftypes.Value{known}), known, nil, nil},
		"null":                 {tftypes.NewValue(entries, nil), tftypes.NewValue(entry, nil), nil, nil},
		"list unknown":         {tftypes.NewValue(entries, tftypes.UnknownValue), known, []string{"set"}, []string{"set"}},
		"element unknown":      {tftypes.NewValue(entries, []tftypes.Value{known, tftypes.NewValue(entry, tftypes.UnknownValue)}), known, []string{"set"}, []string{"set"}},
		"object unknown":       {tftypes.NewValue(entries, nil), tftypes.NewValue(entry, tftypes.UnknownValue), []string{"one"}, []string{"one"}},
		"scalars unknown only": {tftypes.NewValue(entries, []tftypes.Value{partly}), partly, []string{"set", "one"}, nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			raw := tftypes.NewValue(config, map[string]tftypes.Value{"name": unknownString, "set": tc.set, "one": tc.one})
			shared := raw // shares raw's map of attributes, as the copies of a request do
			var diags diag.Diagnostics
			pending := Pending(&raw, &diags, "set", "one")
			if !shared.Equal(tftypes.NewValue(config, map[string]tftypes.Value{"name": unknownString, "set": tc.set, "one": tc.one})) {
				t.Error("Pending changed another copy of the value")
			}
			if diags.HasError() || !slices.Equal(pending, tc.pending) {
				t.Fatalf("Pending = %v (%v), want %v", pending, diags, tc.pending)
			}
			attrs := map[string]tftypes.Value{}
			if err := raw.As(&attrs); err != nil {
				t.Fatal(err)
			}
			if attrs["name"].IsKnown() {
				t.Error("an attribute not named was changed")
			}
			for _, a := range []string{"set", "one"} {
				want := map[string]tftypes.Value{"set": tc.set, "one": tc.one}[a]
				if slices.Contains(tc.null, a) {
					want = tftypes.NewValue(want.Type(), nil)
				}
				if !attrs[a].Equal(want) {
					t.Errorf("%s = %v, want %v", a, attrs[a], want)
				}
			}
		})
	}
}
