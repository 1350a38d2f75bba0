package backend

import (
	"context"

	chart "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/helm"
)

// planArchive is the chart archive of one plan (one ModifyPlan call), fetched at most once and
// shared by the checks that read it then: the render check (planChartCheck) and the update
// guard's engine state (planStrandGuard). It lives only as long as the plan: a later plan fetches
// again, so a version whose archive the repository replaced is never read stale.
type planArchive struct {
	src     helm.Source
	ch      *chart.Chart
	err     error
	fetched bool
}

// chart returns the archive of src: fetched the first time (helm.Client.LocateChart), then the
// same chart, or the same error, for the rest of the plan. A nil planArchive fetches every time.
func (a *planArchive) chart(ctx context.Context, hc *helm.Client, src helm.Source) (*chart.Chart, error) {
	if a == nil {
		return hc.LocateChart(ctx, src)
	}
	if !a.fetched || a.src != src {
		a.ch, a.err = hc.LocateChart(ctx, src)
		a.src, a.fetched = src, true
	}
	return a.ch, a.err
}
