package validate

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

func TestValidators(t *testing.T) {
	tests := []struct {
		name    string
		v       validator.String
		value   string
		want    []string // in the summary and detail; none: valid
		notWant string
	}{
		{name: "valid name", v: DNSSubdomain(), value: "fast-ssd.v1"},
		{name: "upper case and underscore", v: DNSSubdomain(), value: "Fast_SSD",
			want: []string{"Invalid Kubernetes name", `name = "Fast_SSD" is not valid: a lowercase RFC 1123 subdomain`, `Valid values look like "fast-ssd"`, `Did you mean "fast-ssd"?`}},
		{name: "nothing close", v: DNSSubdomain(), value: "__", want: []string{"Invalid Kubernetes name"}, notWant: "Did you mean"},
		{name: "valid key", v: LabelKey(), value: "example.com/disk-type"},
		{name: "bad key", v: LabelKey(), value: "disk type",
			want: []string{"Invalid label key", `name = "disk type" is not valid`, `Valid values look like "tier"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := &validator.StringResponse{}
			tt.v.ValidateString(context.Background(), validator.StringRequest{Path: path.Root("name"), ConfigValue: types.StringValue(tt.value)}, resp)
			if len(tt.want) == 0 {
				if resp.Diagnostics.HasError() {
					t.Fatalf("valid value refused: %v", resp.Diagnostics)
				}
				return
			}
			if resp.Diagnostics.ErrorsCount() != 1 {
				t.Fatalf("want one error, got %v", resp.Diagnostics)
			}
			d := resp.Diagnostics.Errors()[0]
			text := d.Summary() + "\n" + d.Detail()
			for _, w := range tt.want {
				if !strings.Contains(text, w) {
					t.Errorf("diagnostic does not say %q:\n%s", w, text)
				}
			}
			if tt.notWant != "" && strings.Contains(text, tt.notWant) {
				t.Errorf("diagnostic says %q:\n%s", tt.notWant, text)
			}
		})
	}
}
