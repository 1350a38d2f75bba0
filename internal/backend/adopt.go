package backend

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/importmark"
)

// privateAdopted marks, in private state, a release adopted by an import (or a moved block)
// whose fields the provider has not taken over yet: a release installed with the helm CLI has
// them owned by the CLI's field manager ("helm"), and a server-side apply as the provider's own
// manager would never prune a field that manager still owns (helm.Release.Adopted). The mark
// is set by the Read that adopts the release and cleared by the first upgrade after it.
const privateAdopted = "adopted_fields"

// markAdopted records that the next upgrade takes over the helm CLI's fields.
func markAdopted(ctx context.Context, p importmark.Setter) diag.Diagnostics {
	return p.SetKey(ctx, privateAdopted, []byte(`true`))
}

// adoptionPending reports whether the release was adopted and not upgraded since.
func adoptionPending(ctx context.Context, p importmark.Getter) bool {
	v, diags := p.GetKey(ctx, privateAdopted)
	return !diags.HasError() && string(v) == "true"
}

// adoptionDone clears the mark once an upgrade took the fields over.
func adoptionDone(ctx context.Context, p importmark.Setter) diag.Diagnostics {
	return p.SetKey(ctx, privateAdopted, nil)
}
