// Package validate holds Terraform attribute validators shared by the resources and data
// sources: Kubernetes names, which wrap the API server's own validation so plan-time errors match
// what the cluster would say at apply, and the characters of paths on nodes (NodePath). Each
// says which attribute is wrong, why, and what a valid value looks like.
package validate

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"k8s.io/apimachinery/pkg/util/validation"
)

// DNSSubdomain checks a DNS-1123 subdomain, the rule for most object names.
func DNSSubdomain() validator.String {
	return stringCheck{
		summary:     "Invalid Kubernetes name",
		description: "must be a DNS-1123 subdomain: lower case letters, digits, `-` and `.`, starting and ending with a letter or digit, at most 253 characters",
		example:     `"fast-ssd" and "local.disks-1"`,
		check:       validation.IsDNS1123Subdomain,
		suggest:     subdomainLike,
	}
}

// LabelKey checks a label or annotation key (an optional DNS prefix and `/`, then a name).
func LabelKey() validator.String {
	return stringCheck{
		summary:     "Invalid label key",
		description: "must be a valid label key: an optional DNS subdomain prefix and `/`, then at most 63 letters, digits, `-`, `_` or `.`, starting and ending with a letter or digit",
		example:     `"tier" and "example.com/disk-type"`,
		check:       validation.IsQualifiedName,
	}
}

type stringCheck struct {
	// summary names what is invalid.
	summary string
	// description says what a valid value is.
	description string
	// example shows valid values.
	example string
	check   func(string) []string
	// suggest, when set, returns a valid value close to an invalid one, or "".
	suggest func(string) string
}

func (v stringCheck) Description(context.Context) string         { return v.description }
func (v stringCheck) MarkdownDescription(context.Context) string { return v.description }

func (v stringCheck) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	value := req.ConfigValue.ValueString()
	problems := v.check(value)
	if len(problems) == 0 {
		return
	}
	detail := fmt.Sprintf("%s = %q is not valid: %s.\nValid values look like %s.",
		req.Path, value, strings.TrimSuffix(strings.Join(problems, "; "), "."), v.example)
	if v.suggest != nil {
		if s := v.suggest(value); s != "" && s != value && len(v.check(s)) == 0 {
			detail += fmt.Sprintf(" Did you mean %q?", s)
		}
	}
	resp.Diagnostics.AddAttributeError(req.Path, v.summary, detail)
}

var notSubdomain = regexp.MustCompile(`[^a-z0-9.-]+`)

// subdomainLike lower-cases s and replaces runs of other characters with `-`.
func subdomainLike(s string) string {
	return strings.Trim(notSubdomain.ReplaceAllString(strings.ToLower(s), "-"), "-.")
}
