package tfconv

import (
	"maps"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/types"
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
