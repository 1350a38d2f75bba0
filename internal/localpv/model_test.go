package localpv

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// TestSpecErrorsNameTheAttribute: values the validators could not see at plan (unknown then) are
// reported at apply on their attribute, with what a valid one looks like.
func TestSpecErrorsNameTheAttribute(t *testing.T) {
	m := model{
		Name: types.StringValue("v"), Node: types.StringValue("n"), Path: types.StringValue("/mnt/v"),
		Capacity: types.StringValue("ten gigs"), DirectoryMode: types.StringValue("rwx"),
		AccessModes: types.SetNull(types.StringType), MountOptions: types.ListNull(types.StringType), Labels: types.MapNull(types.StringType),
	}
	_, diags := m.spec(context.Background())
	want := map[string]string{"capacity": "write it like `10Gi`", "directory_mode": "is not an octal mode such as 0755"}
	if diags.ErrorsCount() != len(want) {
		t.Fatalf("want %d errors, got %v", len(want), diags)
	}
	for _, d := range diags.Errors() {
		p, ok := d.(diag.DiagnosticWithPath)
		if !ok {
			t.Errorf("error without an attribute path: %s: %s", d.Summary(), d.Detail())
			continue
		}
		found := false
		for attr, text := range want {
			if p.Path().Equal(path.Root(attr)) {
				found = true
				if !strings.Contains(d.Detail(), text) {
					t.Errorf("%s: detail %q does not say %q", attr, d.Detail(), text)
				}
			}
		}
		if !found {
			t.Errorf("unexpected error on %s: %s", p.Path(), d.Detail())
		}
	}
}
