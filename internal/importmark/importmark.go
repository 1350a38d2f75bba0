// Package importmark marks a resource as just imported, in its private state, so that the Read
// that follows ImportState knows to adopt what the cluster has (every label and annotation, the
// configuration attributes an import cannot know) instead of keeping only what a configuration
// manages. Terraform runs that Read right after ImportState; the mark is cleared by it.
//
//	func (r *Resource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
//		importmark.ImportByID(ctx, req, resp)
//	}
//
//	func (r *Resource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
//		imported, diags := importmark.FirstRead(ctx, req.Private, resp.Private)
//		...
//	}
package importmark

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"
)

// key is the private state key of the mark.
const key = "imported"

// Getter reads private state (a ReadRequest's Private, or any request's).
type Getter interface {
	GetKey(ctx context.Context, key string) ([]byte, diag.Diagnostics)
}

// Setter writes private state (an ImportStateResponse's or ReadResponse's Private).
type Setter interface {
	SetKey(ctx context.Context, key string, value []byte) diag.Diagnostics
}

// Mark records that the resource was just imported.
func Mark(ctx context.Context, p Setter) diag.Diagnostics {
	return p.SetKey(ctx, key, []byte(`true`))
}

// FirstRead reports whether this Read is the first after an import, and clears the mark in the
// response (Terraform keeps it only if the Read succeeds, so a failed one is tried again as the
// first).
func FirstRead(ctx context.Context, req Getter, resp Setter) (bool, diag.Diagnostics) {
	v, diags := req.GetKey(ctx, key)
	if v == nil || diags.HasError() {
		return false, diags
	}
	diags.Append(resp.SetKey(ctx, key, nil)...)
	return true, diags
}

// AlreadyExistsDetail is the detail of a create that found a cluster object of that name already
// there: it says how to bring that object under Terraform with either way of importing (the CLI
// and, for Terraform 1.5+ and OpenTofu, an import block) or to choose another name. kind is the
// Kubernetes kind, typeName the resource type, id the import ID.
func AlreadyExistsDetail(kind, name, typeName, id string, err error) string {
	return fmt.Sprintf("A %s named %s already exists in the cluster, and no state of this resource records it: it was made outside "+
		"this configuration, or by an apply whose provider was killed in the instant after it made it (%v).\n\n"+
		"To manage that %s with Terraform, import it, from the command line:\n\n"+
		"  terraform import %s.<name> %s\n\n"+
		"or with an import block in the configuration (Terraform 1.5+, OpenTofu):\n\n"+
		"  import {\n    to = %s.<name>\n    id = %q\n  }\n\n"+
		"Otherwise choose another name, or delete the existing %s if nothing uses it.",
		kind, name, err, kind, typeName, id, typeName, id, kind)
}
