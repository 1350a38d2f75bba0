package backend

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

// k3s installs charts through its helm-controller (github.com/k3s-io/helm-controller): a
// HelmChart object (helm.cattle.io/v1, namespaced) names the chart, and the controller installs
// and upgrades release <HelmChart name> into spec.targetNamespace (else the HelmChart's own
// namespace) from it, with a Job running Helm. A release made that way has two owners once this
// provider installs over it or imports it: each upgrade of one is undone by the other. Deleting
// such a HelmChart uninstalls its release (the controller's on-helm-chart-remove finalizer),
// unless it carries the annotation helmcharts.helm.cattle.io/unmanaged, which makes the
// controller leave the object alone, removal included. HelmCharts with neither spec.chart nor
// spec.chartContent are not acted on either.

// helmChartGVR is k3s's HelmChart kind.
var helmChartGVR = schema.GroupVersionResource{Group: "helm.cattle.io", Version: "v1", Resource: "helmcharts"}

// annotationHelmChartUnmanaged makes k3s's helm-controller ignore a HelmChart.
const annotationHelmChartUnmanaged = "helmcharts.helm.cattle.io/unmanaged"

// managingHelmCharts returns, as namespace/name, the HelmCharts through which k3s's
// helm-controller manages release name in namespace. A cluster without the HelmChart kind has
// none.
func managingHelmCharts(ctx context.Context, dyn dynamic.Interface, namespace, name string) ([]string, error) {
	list, err := dyn.Resource(helmChartGVR).Namespace(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if kube.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, hc := range list.Items {
		if managedByHelmController(hc, namespace) {
			out = append(out, hc.GetNamespace()+"/"+hc.GetName())
		}
	}
	sort.Strings(out)
	return out, nil
}

// managedByHelmController reports whether helm-controller acts on HelmChart hc and installs its
// release into namespace.
func managedByHelmController(hc unstructured.Unstructured, namespace string) bool {
	if _, ok := hc.GetAnnotations()[annotationHelmChartUnmanaged]; ok {
		return false
	}
	chart, _, _ := unstructured.NestedString(hc.Object, "spec", "chart")            //nolint:errcheck // a wrong type reads as unset
	content, _, _ := unstructured.NestedString(hc.Object, "spec", "chartContent")   //nolint:errcheck // as above
	target, _, _ := unstructured.NestedString(hc.Object, "spec", "targetNamespace") //nolint:errcheck // as above
	if chart == "" && content == "" {
		return false
	}
	if target == "" {
		target = hc.GetNamespace()
	}
	return target == namespace
}

// helmControllerGuard refuses to install over or import release s while k3s's helm-controller
// manages it (what is "installing" or "importing"). A cluster whose HelmCharts cannot be listed
// gets a warning: the check is a convenience, the user may know better.
func helmControllerGuard(ctx context.Context, dyn dynamic.Interface, s spec, what string) diag.Diagnostics {
	var diags diag.Diagnostics
	charts, err := managingHelmCharts(ctx, dyn, s.Namespace, s.ReleaseName)
	if err != nil {
		tflog.Warn(ctx, "cannot list k3s HelmCharts", map[string]any{"error": err.Error()})
		diags.AddWarning("Could not check for a k3s HelmChart managing release "+s.id(),
			"Listing helmcharts.helm.cattle.io failed: "+err.Error()+". If k3s's helm-controller manages this release "+
				"(a HelmChart of the same name), it and this provider will undo each other's upgrades.")
		return diags
	}
	return helmControllerError(s, charts, what)
}

// helmControllerError is the error for release s managed through charts ("" when none).
func helmControllerError(s spec, charts []string, what string) diag.Diagnostics {
	var diags diag.Diagnostics
	if len(charts) == 0 {
		return diags
	}
	first := strings.SplitN(charts[0], "/", 2)
	diags.AddError(fmt.Sprintf("Release %s is managed by k3s's helm-controller", s.id()),
		fmt.Sprintf("HelmChart %s (helm.cattle.io/v1) installs release %s into namespace %s: k3s's helm-controller upgrades and "+
			"reinstalls it from that object, so it and this provider would undo each other's changes. Nothing was changed by %s it.\n\n"+
			"To hand the release over to Terraform: first annotate the HelmChart so the controller lets go of it without "+
			"uninstalling it (`kubectl -n %s annotate helmchart %s %s=true`); then remove what re-creates it (its manifest in "+
			"/var/lib/rancher/k3s/server/manifests, or k3s's `--disable` for a packaged component) and delete the HelmChart; then "+
			"run this again. Never delete a HelmChart the controller still manages: its finalizer uninstalls the release, and "+
			"the volumes of a storage backend with it. To keep k3s in charge instead, change the chart's values with a "+
			"HelmChartConfig and leave this release out of Terraform.",
			strings.Join(charts, ", "), s.ReleaseName, s.Namespace, what, first[0], first[1], annotationHelmChartUnmanaged))
	return diags
}
