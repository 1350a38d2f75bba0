package backend_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/helm"
)

// TestAccStorageBackend_rawValuesAndDrift: raw values and set entries reach the chart, one that
// contradicts a typed setting fails the plan, and an upgrade or uninstall made with Helm outside
// Terraform, and a kubectl edit or delete of the release's objects, show in the next plan.
func TestAccStorageBackend_rawValuesAndDrift(t *testing.T) {
	f := newFixture(t)
	class := acctest.RandomName("acc-hostpath")
	typed := fmt.Sprintf("    hostpath_class_name = %q", class)
	raw := `
  values = [<<-EOT
    localpv-provisioner:
      localpv:
        resources:
          requests:
            cpu: 15m
  EOT
  ]
  set = [{ name = "localpv-provisioner.localpv.resources.requests.memory", value = "40Mi" }]
`
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy:             f.checkReleaseGone("openebs"),
		Steps: []resource.TestStep{
			{
				Config: f.openebs("4.4.0", typed, `
  values = [<<-EOT
    engines:
      replicated:
        mayastor:
          enabled: true
  EOT
  ]
`),
				ExpectError: acctest.ErrorWords("values[0] sets engines.replicated.mayastor.enabled to true, but the typed setting asks for false"),
			},
			{
				Config:      f.openebs("4.4.0", typed, `set = [{ name = "engines.local.lvm.enabled", value = "true" }]`),
				ExpectError: acctest.ErrorWords("set[engines.local.lvm.enabled] sets engines.local.lvm.enabled to true"),
			},
			{
				Config: f.openebs("4.4.0", typed, raw),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("footprint").AtMapKey("cpu_requests_millicores"), knownvalue.Int64Exact(15)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("footprint").AtMapKey("memory_requests_bytes"), knownvalue.Int64Exact(40<<20)),
				},
				Check: f.checkFootprint(),
			},
			{
				// helm upgrade outside Terraform: the plan upgrades the release back.
				PreConfig: func() {
					_, err := f.helm.SetValues(context.Background(), "openebs", f.ns, func(v map[string]any) {
						lp, _ := v["localpv-provisioner"].(map[string]any)
						localpv, _ := lp["localpv"].(map[string]any)
						if localpv == nil {
							t.Fatalf("values of the release: %v", v)
						}
						localpv["resources"] = map[string]any{"requests": map[string]any{"cpu": "25m"}}
					}, true, time.Minute)
					if err != nil {
						t.Fatal(err)
					}
				},
				Config: f.openebs("4.4.0", typed, raw),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("revision"), knownvalue.Int64Exact(3)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("footprint").AtMapKey("cpu_requests_millicores"), knownvalue.Int64Exact(15)),
				},
			},
			{
				// kubectl edit of a field the chart sets, and kubectl delete of an object of the
				// release: the plan upgrades the release, which puts both back.
				PreConfig: func() { f.editLikeKubectl("app", "edited", "-localpv-provisioner-config") },
				Config:    f.openebs("4.4.0", typed, raw),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("revision"), knownvalue.Int64Exact(4)),
				},
				Check: f.checkProvisionerLabel("app", "localpv-provisioner"),
			},
			{
				// A chart version changed outside Terraform shows in `version`.
				PreConfig: func() {
					live, err := f.release()
					if err != nil {
						t.Fatal(err)
					}
					rel := f.chart("openebs", "4.0.1")
					// 4.0 reads the same engines.* conditions: the live values keep the engines off.
					rel.Values, rel.Wait, rel.Timeout = live.Values, true, time.Minute
					if _, err := f.helm.Upgrade(context.Background(), *rel); err != nil {
						t.Fatal(err)
					}
				},
				Config: f.openebs("4.4.0", typed, raw),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("version"), knownvalue.StringExact("4.4.0")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("revision"), knownvalue.Int64Exact(6)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("chart_version"), knownvalue.StringExact("4.4.0")),
				},
			},
			{
				// helm uninstall outside Terraform: the plan installs it again.
				PreConfig: func() {
					if err := f.helm.Uninstall(context.Background(), "openebs", f.ns, helm.UninstallOptions{Wait: true, Timeout: time.Minute}); err != nil {
						t.Fatal(err)
					}
				},
				Config: f.openebs("4.4.0", typed, raw),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("revision"), knownvalue.Int64Exact(1)),
				},
			},
			{
				// Unsupported versions (another major; a later 4.x minor is checked against its
				// archive at apply instead) fail at plan, saying which are supported.
				Config:      f.openebs("5.0.1", typed, raw),
				PlanOnly:    true,
				ExpectError: acctest.ErrorWords("openebs chart version 5.0.1 is not supported"),
			},
		},
	})
}

// provisionerDeployment returns the release's provisioner Deployment.
func (f *fixture) provisionerDeployment(ctx context.Context) *appsv1.Deployment {
	f.t.Helper()
	list, err := f.client.AppsV1().Deployments(f.ns).List(ctx, metav1.ListOptions{LabelSelector: "release=openebs"})
	if err != nil {
		f.t.Fatal(err)
	}
	for i := range list.Items {
		if list.Items[i].Spec.Template.Labels["app"] == "localpv-provisioner" {
			return &list.Items[i]
		}
	}
	f.t.Fatalf("no localpv-provisioner Deployment of release openebs in %s (%d Deployments)", f.ns, len(list.Items))
	return nil
}

// editLikeKubectl changes label key of the provisioner Deployment to value with an update, as
// kubectl edit does (another field manager, the whole object written back), and deletes the
// release's ConfigMap whose name ends in configMapSuffix.
func (f *fixture) editLikeKubectl(key, value, configMapSuffix string) {
	f.t.Helper()
	ctx := context.Background()
	d := f.provisionerDeployment(ctx)
	d.Labels[key] = value
	if _, err := f.client.AppsV1().Deployments(f.ns).Update(ctx, d, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		f.t.Fatal(err)
	}
	cms, err := f.client.CoreV1().ConfigMaps(f.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	for _, cm := range cms.Items {
		if strings.HasSuffix(cm.Name, configMapSuffix) {
			if err := f.client.CoreV1().ConfigMaps(f.ns).Delete(ctx, cm.Name, metav1.DeleteOptions{}); err != nil {
				f.t.Fatal(err)
			}
			return
		}
	}
	f.t.Fatalf("no ConfigMap *%s in %s", configMapSuffix, f.ns)
}

// checkProvisionerLabel checks that the provisioner Deployment's label key is value.
func (f *fixture) checkProvisionerLabel(key, value string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		if got := f.provisionerDeployment(context.Background()).Labels[key]; got != value {
			return fmt.Errorf("label %s of the provisioner Deployment is %q, want %q", key, got, value)
		}
		return nil
	}
}
