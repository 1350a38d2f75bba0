package backend

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/helm"
)

// settingsError reports why the settings cannot be mapped onto a chart version: on `values`,
// `set` or `set_sensitive` for a contradiction, on `version` otherwise.
func settingsError(s spec, err error) diag.Diagnostics {
	var diags diag.Diagnostics
	p := path.Root("version")
	var ce *contradictionError
	var se *settingError
	switch {
	case errors.As(err, &ce):
		p = path.Root(ce.attribute())
	case errors.As(err, &se):
		p = path.Root(se.Block).AtName(se.Setting)
	}
	diags.AddAttributeError(p, "Invalid "+s.Type+" settings", err.Error())
	return diags
}

// Helm operations, as applyFailure names them.
const (
	opInstall   = "install"
	opUpgrade   = "upgrade"
	opUninstall = "uninstall"
)

// applyFailure builds the detail of a failed install, upgrade or uninstall: Helm's error, what
// waiting meant, what the release looks like now (left is the release read after the failure,
// getErr why it could not be read) and what to do.
func applyFailure(op string, s spec, timeout time.Duration, err error, left *helm.Status, getErr error) string {
	var b strings.Builder
	b.WriteString(err.Error())
	if op != opUninstall && s.Wait && waitFailed(err) {
		fmt.Fprintf(&b, "\n\nThe %s waited up to %s for every workload of the release to become ready. Look at the pods in namespace %s "+
			"(`kubectl -n %s get pods`, their events) or raise timeouts.%s (e.g. `timeouts = { %s = \"30m\" }`).",
			op, timeout, s.Namespace, s.Namespace, timeoutKey(op), timeoutKey(op))
	}
	switch {
	case op == opUninstall:
		if s.Type == typeLonghorn {
			fmt.Fprintf(&b, "\n\nLonghorn's pre-delete hook (Job longhorn-uninstall) refuses while the %s setting is false and waits "+
				"for Longhorn's volumes to be detached: look at its log (`kubectl -n %s logs job/longhorn-uninstall`).", longhornDeletingFlag, s.Namespace)
		}
		fmt.Fprintf(&b, "\n\nThe release stays in state; fix the cause and destroy again (`helm status %s -n %s` shows where it stands).", s.ReleaseName, s.Namespace)
	case getErr == nil && left != nil:
		fmt.Fprintf(&b, "\n\nThe release is now revision %d (%s, chart %s)", left.Revision, left.Status, left.ChartVersion)
		switch {
		case op == opUpgrade && s.Wait:
			b.WriteString(": a failed upgrade is rolled back.")
		case op == opInstall:
			b.WriteString("; the next apply replaces it.")
		default:
			b.WriteString(".")
		}
	case errors.Is(getErr, helm.ErrNotFound):
		if op == opInstall && s.Wait {
			b.WriteString("\n\nThe release was removed again (atomic install).")
		}
	case getErr != nil:
		b.WriteString("\n\nWhat the release looks like now could not be read: " + getErr.Error())
	}
	return b.String()
}

func timeoutKey(op string) string {
	if op == opInstall {
		return "create"
	}
	return "update"
}

// readFailure is the detail of a failed read of a release.
func readFailure(namespace string, err error) string {
	return err.Error() + ". Helm keeps releases as Secrets in their namespace: check that the provider's credentials may read Secrets in namespace " + namespace + "."
}

// waitFailed reports whether a Helm error says that waiting for the release's workloads ran out
// of time.
func waitFailed(err error) bool {
	msg := err.Error()
	return errors.Is(err, context.DeadlineExceeded) || strings.Contains(msg, "context deadline exceeded") ||
		strings.Contains(msg, "timed out waiting")
}
