// Package validate holds Terraform attribute validators for Kubernetes names, shared by the
// resources. Each wraps the API server's own validation so plan-time errors match what the
// cluster would say at apply.
package validate

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"k8s.io/apimachinery/pkg/util/validation"
)

// DNSSubdomain checks a DNS-1123 subdomain, the rule for most object names.
func DNSSubdomain() validator.String {
	return stringCheck{
		description: "must be a DNS-1123 subdomain: lower case letters, digits, `-` and `.`, starting and ending with a letter or digit, at most 253 characters",
		check:       validation.IsDNS1123Subdomain,
	}
}

// LabelKey checks a label or annotation key (an optional DNS prefix and `/`, then a name).
func LabelKey() validator.String {
	return stringCheck{
		description: "must be a valid label key: an optional DNS subdomain prefix and `/`, then at most 63 letters, digits, `-`, `_` or `.`",
		check:       validation.IsQualifiedName,
	}
}

type stringCheck struct {
	description string
	check       func(string) []string
}

func (v stringCheck) Description(context.Context) string         { return v.description }
func (v stringCheck) MarkdownDescription(context.Context) string { return v.description }

func (v stringCheck) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	value := req.ConfigValue.ValueString()
	if problems := v.check(value); len(problems) > 0 {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid value",
			fmt.Sprintf("%q %s (%s).", value, v.description, strings.Join(problems, "; ")))
	}
}
