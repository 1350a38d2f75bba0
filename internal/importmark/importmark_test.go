package importmark

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
)

// store is private state as the framework keeps it: a map, where nil deletes the key.
type store map[string][]byte

func (s store) GetKey(_ context.Context, k string) ([]byte, diag.Diagnostics) { return s[k], nil }
func (s store) SetKey(_ context.Context, k string, v []byte) diag.Diagnostics {
	if v == nil {
		delete(s, k)
	} else {
		s[k] = v
	}
	return nil
}

func TestFirstRead(t *testing.T) {
	ctx := context.Background()
	s := store{}
	if first, diags := FirstRead(ctx, s, s); first || diags.HasError() {
		t.Fatalf("unmarked: first=%v %v", first, diags)
	}
	if diags := Mark(ctx, s); diags.HasError() {
		t.Fatal(diags)
	}
	if first, diags := FirstRead(ctx, s, s); !first || diags.HasError() {
		t.Fatalf("marked: first=%v %v", first, diags)
	}
	if first, _ := FirstRead(ctx, s, s); first {
		t.Error("the mark outlived the first Read")
	}
}
