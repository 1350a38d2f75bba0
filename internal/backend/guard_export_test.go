package backend

import (
	"context"
	"strings"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/helm"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/providerdata"
)

// Exports of the guards for the external cluster tests (guard_crs_test.go).

func guardResource(kubeconfig string) *Resource {
	return &Resource{data: &providerdata.Data{Kube: kube.NewClients(kube.Config{ConfigPath: kubeconfig})}}
}

// GuardDestroy runs the destroy guard (guard.go) of a release of backendType in namespace whose
// manifest is manifest, on the cluster of kubeconfig, with force_destroy as given: the summary
// and detail of each diagnostic it returns, errors first marked "error:", warnings "warning:".
func GuardDestroy(ctx context.Context, kubeconfig, backendType, namespace, manifest string, force bool) (string, error) {
	r := guardResource(kubeconfig)
	client, err := r.data.Kube.Typed()
	if err != nil {
		return "", err
	}
	s := spec{Type: backendType, Namespace: namespace, ReleaseName: backendType, ForceDestroy: force}
	diags := r.guard(ctx, client, s, &helm.Status{Name: backendType, Namespace: namespace, Manifest: manifest})
	var b strings.Builder
	for _, d := range diags {
		b.WriteString(strings.ToLower(d.Severity().String()) + ": " + d.Summary() + "\n" + d.Detail() + "\n")
	}
	return b.String(), nil
}

// GuardUpdate runs the update guard (strand.go) of the live release described (chart version,
// its chart's values, the user-supplied values, its manifest) against the planned one: the
// diagnostics as GuardDestroy gives them.
func GuardUpdate(ctx context.Context, kubeconfig, backendType, namespace, manifest, fromVersion string, fromChart, from map[string]any,
	toVersion string, toChart, to map[string]any) (string, error) {
	r := guardResource(kubeconfig)
	client, err := r.data.Kube.Typed()
	if err != nil {
		return "", err
	}
	s := spec{Type: backendType, Namespace: namespace, ReleaseName: backendType}
	live := &helm.Status{Name: backendType, Namespace: namespace, Manifest: manifest, ChartVersion: fromVersion, ChartValues: fromChart, Values: from}
	diags, err := r.strandGuard(ctx, client, s, live, toVersion, toChart, to)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, d := range diags {
		b.WriteString(strings.ToLower(d.Severity().String()) + ": " + d.Summary() + "\n" + d.Detail() + "\n")
	}
	return b.String(), nil
}
