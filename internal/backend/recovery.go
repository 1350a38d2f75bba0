// Ownership and recovery of the Helm release: only releases this provider made, and only once no
// operation on them can still run, are ever repaired.

package backend

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/helm"
)

// claimReleaseName checks, before an install, that no release of the name exists. The one
// exception is a release this provider installed whose install was interrupted and cannot still
// be running (pending-install, never deployed, its timeout passed): recovery removes it, with a
// warning, and the install goes ahead. Anything else, a release made by someone else above all,
// is left as it is and reported with how to import it.
func claimReleaseName(ctx context.Context, hc *helm.Client, s spec, timeout time.Duration) diag.Diagnostics {
	var diags diag.Diagnostics
	st, err := hc.Get(s.ReleaseName, s.Namespace)
	if errors.Is(err, helm.ErrNotFound) {
		return diags
	}
	if err != nil {
		diags.AddError("Reading Helm release "+s.id()+" failed", readFailure(s.Namespace, err))
		return diags
	}
	if st.Status == "pending-install" && st.OwnedBy(releaseOwner) {
		diags.Append(recoverPending(ctx, hc, s, timeout)...)
		if diags.HasError() {
			return diags
		}
		if st, err = hc.Get(s.ReleaseName, s.Namespace); errors.Is(err, helm.ErrNotFound) {
			return diags
		} else if err != nil {
			diags.AddError("Reading Helm release "+s.id()+" failed", readFailure(s.Namespace, err))
			return diags
		}
	}
	who := "It was not installed by this provider (it has no " + helm.OwnerLabel + "=" + releaseOwner + " release label), so it is left exactly as it is."
	if st.OwnedBy(releaseOwner) {
		who = "It was installed by this provider, from another configuration or a state that was lost."
	}
	diags.AddError("Helm release "+s.id()+" already exists",
		fmt.Sprintf("A release with this name exists in namespace %s: revision %d, %s, chart %s %s. %s\n\n"+
			"To manage it here, import it once any helm operation on it has finished: `terraform import <address> %s`, or an "+
			"`import` block with `to = <address>` and `id = %q`. Or choose another release_name or namespace.",
			s.Namespace, st.Revision, st.Status, st.ChartName, st.ChartVersion, who, s.id(), s.id()))
	return diags
}

// recoverPending repairs a release of this provider that an interrupted apply left pending, with
// a warning saying what was done. A pending release of someone else, or one whose operation may
// still run, is an error and is not changed.
func recoverPending(ctx context.Context, hc *helm.Client, s spec, timeout time.Duration) diag.Diagnostics {
	var diags diag.Diagnostics
	msg, err := hc.Recover(ctx, s.ReleaseName, s.Namespace, timeout, s.MaxHistory)
	var notOwned *helm.NotOwnedError
	var inProgress *helm.InProgressError
	switch {
	case errors.As(err, &notOwned):
		diags.AddError("Helm release "+s.id()+" is "+notOwned.Status+" and was not made by this provider",
			fmt.Sprintf("The %s; nothing was changed. Let that operation finish (`helm status %s -n %s`, `helm history %s -n %s`) "+
				"or repair it with helm yourself (e.g. `helm rollback %s -n %s`), then apply again.",
				err, s.ReleaseName, s.Namespace, s.ReleaseName, s.Namespace, s.ReleaseName, s.Namespace))
	case errors.As(err, &inProgress):
		diags.AddError("Helm release "+s.id()+" has an operation in progress",
			fmt.Sprintf("The %s; nothing was changed. Apply again after %s. If you are sure that no terraform, tofu or helm process "+
				"works on it any more, `helm rollback %s -n %s` (or `helm uninstall` of a release that was never deployed) repairs it now.",
				err, inProgress.Until.UTC().Format(time.RFC3339), s.ReleaseName, s.Namespace))
	case err != nil:
		diags.AddError("Recovering Helm release "+s.id()+" failed",
			fmt.Sprintf("The release is stuck in a pending state from an interrupted apply and could not be repaired: %v. "+
				"Inspect it with `helm history %s -n %s`.", err, s.ReleaseName, s.Namespace))
	case msg != "":
		tflog.Warn(ctx, msg)
		diags.AddWarning("Recovered an interrupted Helm release", msg)
	}
	return diags
}
