package backend_test

import (
	"context"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
)

// A release that k3s's helm-controller manages (a HelmChart of the release's name installing into
// the backend's namespace, as k3s makes for its packaged charts and for manifests in
// /var/lib/rancher/k3s/server/manifests) is refused at plan for an install, with the way to hand
// it over; nothing is installed. (Import runs the same check; an import step here failed under
// tofu at init, before reaching the provider, and is left out until that is understood.) Once the HelmChart carries the annotation that
// makes the controller let go of it, the same configuration plans an install. Plan-only: no
// release is installed.
func TestAccStorageBackend_k3sHelmChart(t *testing.T) {
	acctest.RunsUnder(t, acctest.FirstCLIOnly)
	f := newFixture(t)
	dyn, err := dynamic.NewForConfig(f.rc)
	if err != nil {
		t.Fatal(err)
	}
	acctest.InstallHelmChartCRD(t, dyn)
	// In the namespace k3s keeps its HelmCharts in (kube-system there; default here, which every
	// cluster has), installing into the test's namespace. Its name is the release's, so
	// concurrent runs of this test are serialized by the CRD's lock, which it is removed before.
	charts := dyn.Resource(acctest.HelmChartGVR).Namespace(metav1.NamespaceDefault)
	hc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "helm.cattle.io/v1",
		"kind":       "HelmChart",
		"metadata":   map[string]any{"name": "openebs", "namespace": metav1.NamespaceDefault},
		"spec":       map[string]any{"chart": "openebs", "repo": "https://openebs.github.io/openebs", "targetNamespace": f.ns},
	}}
	if _, err := charts.Create(context.Background(), hc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := charts.Delete(context.Background(), "openebs", metav1.DeleteOptions{}); err != nil {
			t.Errorf("removing the HelmChart: %v", err)
		}
	})
	refused := regexp.MustCompile(`(?s)Release ` + f.ns + `/openebs is managed by k3s's helm-controller.*HelmChart default/openebs.*helmcharts\.helm\.cattle\.io/unmanaged=true`)
	config := f.openebs("4.4.0", "", "")
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{
			{Config: config, PlanOnly: true, ExpectError: refused},
			{
				PreConfig: func() {
					patch := []byte(`{"metadata":{"annotations":{"helmcharts.helm.cattle.io/unmanaged":"true"}}}`)
					if _, err := charts.Patch(context.Background(), "openebs", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
						t.Fatal(err)
					}
				},
				Config: config, PlanOnly: true, ExpectNonEmptyPlan: true,
			},
		},
	})
	if st, err := f.helm.Get("openebs", f.ns); err == nil {
		t.Errorf("a release %s/openebs exists after the refused steps: %s", f.ns, st.Status)
	}
}
