package backend_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/helm"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

// TestAccStorageBackend_adoptTakesOverHelmCLIFields: OpenEBS (the 4.4.0 fixture, engines off)
// installed with the Helm 4 CLI, so that the CLI's manager "helm" owns its objects' fields, is
// adopted with an import block whose configuration moves the hostpath base path, so the same
// apply upgrades it: after that first upgrade no workload of the release has a "helm" entry
// left and the provider's manager applies them (a later chart that drops a field removes it:
// TestIntegrationAdoptionTakesOverHelmCLIFields). The next plan is empty.
func TestAccStorageBackend_adoptTakesOverHelmCLIFields(t *testing.T) {
	acctest.RunsUnder(t, acctest.EveryCLI)
	f := newFixture(t)
	class := acctest.RandomName("acc-hostpath")
	base1, base2 := t.TempDir(), t.TempDir()
	helmRun(t, "install", "openebs", "openebs", "--repo", f.repo, "--version", "4.4.0", "--namespace", f.ns, "--create-namespace",
		"--set", "loki.enabled=false,alloy.enabled=false,engines.replicated.mayastor.enabled=false,engines.local.lvm.enabled=false,engines.local.zfs.enabled=false",
		"--set", "openebs-crds.csi.volumeSnapshots.enabled=false,localpv-provisioner.hostpathClass.name="+class,
		"--set", "localpv-provisioner.hostpathClass.basePath="+base1)

	// managers lists, per workload of the namespace, the managers of its own (not a subresource's)
	// fields with their operation.
	managers := func() map[string][]string {
		ctx := context.Background()
		out := map[string][]string{}
		deployments, err := f.client.AppsV1().Deployments(f.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		daemonSets, err := f.client.AppsV1().DaemonSets(f.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		add := func(kind string, m metav1.ObjectMeta) {
			for _, e := range m.ManagedFields {
				if e.Subresource == "" {
					out[kind+"/"+m.Name] = append(out[kind+"/"+m.Name], e.Manager+" "+string(e.Operation))
				}
			}
		}
		for _, d := range deployments.Items {
			add("Deployment", d.ObjectMeta)
		}
		for _, d := range daemonSets.Items {
			add("DaemonSet", d.ObjectMeta)
		}
		return out
	}
	before := managers()
	if len(before) == 0 {
		t.Fatal("the helm CLI's release has no workload")
	}
	for name, m := range before {
		if !slices.Contains(m, helm.HelmCLIManager+" Apply") || slices.Contains(m, kube.FieldManager+" Apply") {
			t.Fatalf("after helm install, %s is managed by %q, want helm's Apply and not the provider's", name, m)
		}
	}

	// force_destroy: the destroy guard counts every volume of OpenEBS's drivers on the cluster,
	// other tests' included; this test is not about it.
	config := f.openebs("4.4.0", fmt.Sprintf("    hostpath_class_name = %q\n    hostpath_base_path = %q", class, base2), "  force_destroy = true")
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: config + fmt.Sprintf("\nimport {\n  to = %s\n  id = %q\n}\n", addr, f.ns+"/openebs"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				Check: func(*terraform.State) error {
					after := managers()
					if len(after) != len(before) {
						return fmt.Errorf("workloads before the adoption %q, after %q", before, after)
					}
					for name, m := range after {
						if slices.Contains(m, helm.HelmCLIManager+" Apply") || slices.Contains(m, helm.HelmCLIManager+" Update") ||
							!slices.Contains(m, kube.FieldManager+" Apply") {
							return fmt.Errorf("after the adopting upgrade %s is managed by %q, want %s's Apply and nothing of helm", name, m, kube.FieldManager)
						}
					}
					return nil
				},
			},
			{Config: config, PlanOnly: true},
		},
	})
}

// TestAccStorageBackend_adoptThenEngineOff: OpenEBS (the 4.4.0 fixture with LVM on) installed
// with the Helm 4 CLI is adopted with an import block; then an LVM volume object whose
// PersistentVolume is gone (an orphan a Retain volume leaves: the LVM driver alone frees its
// space) blocks, at plan, the update that turns LVM off, naming the object; once it is deleted
// the same update applies and the LVM node plugin is gone.
func TestAccStorageBackend_adoptThenEngineOff(t *testing.T) {
	f := newFixture(t)
	e := newCRDEnv(t, lockOpenEBSVolumeCRDs)
	lvmGVR := e.crd("lvmvolumes.yaml")
	class, base := acctest.RandomName("acc-hostpath"), t.TempDir()
	helmRun(t, "install", "openebs", "openebs", "--repo", f.repo, "--version", "4.4.0", "--namespace", f.ns, "--create-namespace",
		"--set", "loki.enabled=false,alloy.enabled=false,engines.replicated.mayastor.enabled=false,engines.local.lvm.enabled=true,engines.local.zfs.enabled=false",
		"--set", "openebs-crds.csi.volumeSnapshots.enabled=false,localpv-provisioner.hostpathClass.name="+class,
		"--set", "localpv-provisioner.hostpathClass.basePath="+base)
	orphan := acctest.RandomName("pvc-lvm-orphan")
	lvmNode := func(want bool) resource.TestCheckFunc {
		return func(*terraform.State) error {
			list, err := f.client.AppsV1().DaemonSets(f.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=lvm-localpv-node"})
			if err != nil {
				return err
			}
			if got := len(list.Items) > 0; got != want {
				return fmt.Errorf("the LVM node plugin's DaemonSet exists: %t, want %t", got, want)
			}
			return nil
		}
	}
	// force_destroy: the destroy guard counts every volume of OpenEBS's drivers on the cluster,
	// other tests' included; this test is not about it.
	config := func(lvm bool) string {
		return f.openebs("4.4.0", fmt.Sprintf("    hostpath_class_name = %q\n    hostpath_base_path = %q\n    lvm_enabled = %t", class, base, lvm),
			"  force_destroy = true")
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy:             f.checkReleaseGone("openebs"),
		Steps: []resource.TestStep{
			{
				Config: config(true) + fmt.Sprintf("\nimport {\n  to = %s\n  id = %q\n}\n", addr, f.ns+"/openebs"),
				Check:  lvmNode(true),
			},
			{
				PreConfig: func() {
					e.create(lvmGVR, "LVMVolume", orphan, "", map[string]any{"ownerNodeID": acctest.Node(t), "volGroup": "lvmvg",
						"capacity": "1073741824", "vgPattern": "^lvmvg$"}, map[string]any{"state": "Ready"})
				},
				Config:   config(false),
				PlanOnly: true,
				ExpectError: regexp.MustCompile(`(?s)Update of storage backend ` + regexp.QuoteMeta(f.ns+"/openebs") + ` would strand volumes.*` +
					`lvm_enabled \(engines\.local\.lvm\.enabled\) turns from true to false.*LVM volume ` + regexp.QuoteMeta(e.ns+"/"+orphan) +
					` \(local\.csi\.openebs\.io, Ready\): no PersistentVolume`),
			},
			{
				PreConfig: func() {
					if err := e.dyn.Resource(lvmGVR).Namespace(e.ns).Delete(context.Background(), orphan, metav1.DeleteOptions{}); err != nil {
						t.Fatal(err)
					}
				},
				Config: config(false),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				Check: lvmNode(false),
			},
		},
	})
}
