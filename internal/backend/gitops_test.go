package backend_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
)

// TestAccStorageBackend_gitOpsOwned: a release whose objects carry Flux's helm-controller labels,
// then Argo CD's tracking annotation, is refused at import (an import block, at plan) naming the
// HelmRelease or the Application and the marked object; with the marks taken off, the same import
// plans. Plan-only: nothing is imported into state or changed.
func TestAccStorageBackend_gitOpsOwned(t *testing.T) {
	f := newFixture(t)
	class := acctest.RandomName("acc-hostpath")
	rel := f.chart("openebs", "4.4.0")
	rel.CreateNamespace = true
	rel.Values = map[string]any{"loki": map[string]any{"enabled": false}, "alloy": map[string]any{"enabled": false},
		"engines":             map[string]any{"replicated": map[string]any{"mayastor": map[string]any{"enabled": false}}},
		"openebs-crds":        map[string]any{"csi": map[string]any{"volumeSnapshots": map[string]any{"enabled": false}}},
		"localpv-provisioner": map[string]any{"hostpathClass": map[string]any{"name": class}}}
	if _, err := f.helm.Install(context.Background(), *rel); err != nil {
		t.Fatal(err)
	}
	classes := f.client.StorageV1().StorageClasses()
	mark := func(patch string) func() {
		return func() {
			if _, err := classes.Patch(context.Background(), class, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	config := f.openebs("4.4.0", fmt.Sprintf("    hostpath_class_name = %q", class), "") +
		fmt.Sprintf("\nimport {\n  to = %s\n  id = %q\n}\n", addr, f.ns+"/openebs")
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{
			{
				PreConfig: mark(`{"metadata":{"labels":{"helm.toolkit.fluxcd.io/name":"openebs","helm.toolkit.fluxcd.io/namespace":"flux-system"}}}`),
				Config:    config, PlanOnly: true,
				ExpectError: acctest.ErrorRegexp(`Release ` + f.ns + `/openebs is managed by Flux.*Flux HelmRelease flux-system/openebs manages release ` +
					f.ns + `/openebs: its marks are on StorageClass/` + class + `.*flux suspend helmrelease`),
			},
			{
				PreConfig: mark(`{"metadata":{"labels":{"helm.toolkit.fluxcd.io/name":null,"helm.toolkit.fluxcd.io/namespace":null},` +
					`"annotations":{"argocd.argoproj.io/tracking-id":"storage:storage.k8s.io/StorageClass:/` + class + `"}}}`),
				Config: config, PlanOnly: true,
				ExpectError: acctest.ErrorRegexp(`Release ` + f.ns + `/openebs is managed by Argo CD.*Argo CD Application storage manages release ` +
					f.ns + `/openebs: its marks are on StorageClass/` + class),
			},
			{
				PreConfig: mark(`{"metadata":{"annotations":{"argocd.argoproj.io/tracking-id":null}}}`),
				Config:    config, PlanOnly: true, ExpectNonEmptyPlan: true,
			},
		},
	})
}
