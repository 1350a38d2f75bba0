package backend_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
)

// TestAccStorageBackend_preflight checks the node (this machine, reached through a real sshd)
// before installing: Mayastor's hugepages and nvme_tcp, Longhorn's open-iscsi, are reported per
// node and stop the install; settings without prerequisites install.
func TestAccStorageBackend_preflight(t *testing.T) {
	acctest.RunsUnder(t, acctest.FirstCLIOnly)
	f := newFixture(t, acctest.LockMayastorNode)
	sshd := acctest.StartSSHD(t)
	nodeName := acctest.Node(t)
	class := acctest.RandomName("acc-hostpath")
	config := func(typ, block string) string {
		return acctest.ProviderConfigSSH(sshd, nodeName) + fmt.Sprintf(`
resource "clusterstorage_storage_backend" "test" {
  type       = %q
  repository = %q
  namespace  = %q
  preflight  = true
%s
}
`, typ, f.repo, f.ns, block)
	}
	meminfo, _ := os.ReadFile("/proc/meminfo")
	_, nvmeLoaded := os.Stat("/sys/module/nvme_tcp")
	if !strings.Contains(string(meminfo), "HugePages_Total:       0") || nvmeLoaded == nil {
		t.Skip("this machine may meet Mayastor's prerequisites; the test needs a node that does not")
	}
	var steps []resource.TestStep
	if _, err := exec.LookPath("iscsiadm"); err != nil {
		steps = append(steps, resource.TestStep{
			Config:      config("longhorn", "  longhorn = {\n    default_class = false\n  }"),
			ExpectError: acctest.ErrorWords(nodeName + ": open-iscsi is not installed"),
		})
	}
	steps = append(steps, []resource.TestStep{
		{
			// Only the nodes Mayastor runs on are checked.
			PreConfig:   f.labelMayastorNodes,
			Config:      config("openebs", fmt.Sprintf("  openebs = {\n    mayastor_enabled = true\n    hostpath_class_name = %q\n    volume_snapshot_crds = false\n  }", class)),
			ExpectError: acctest.ErrorWords(nodeName + ": 0 MiB of hugepages: Mayastor needs at least 2048 MiB"),
		},
		{
			Config: config("openebs", fmt.Sprintf("  openebs = {\n    hostpath_class_name = %q\n    volume_snapshot_crds = false\n  }", class)),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("status"), knownvalue.StringExact("deployed")),
			},
		},
	}...)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy:             f.checkReleaseGone("openebs"),
		Steps:                    steps,
	})
}

// TestAccStorageBackend_clusterChecks: before installing, through the API, the apply refuses
// VolumeSnapshot CRDs that exist and are not the release's (saying how to leave them), Mayastor
// without a node labelled for its io-engine (naming each node and the missing label), and
// Mayastor whose etcd replicas cannot each get a node (saying how to run fewer).
func TestAccStorageBackend_clusterChecks(t *testing.T) {
	acctest.RunsUnder(t, acctest.FirstCLIOnly)
	f := newFixture(t, acctest.LockSnapshotCRDs, acctest.LockMayastorNode)
	class := acctest.RandomName("acc-hostpath")
	nodeName := acctest.Node(t)
	f.foreignSnapshotCRD()
	nodes, err := f.client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		if n.Labels["openebs.io/engine"] == "mayastor" {
			t.Skipf("node %s is already labelled openebs.io/engine=mayastor", n.Name)
		}
	}
	steps := []resource.TestStep{
		{
			Config: f.openebs("4.4.0", fmt.Sprintf("    hostpath_class_name = %q\n    volume_snapshot_crds = true", class), ""),
			// Not made by Helm here, or a kept leftover of another release (e.g. the demo's).
			ExpectError: acctest.ErrorWords("CRDs of openebs already exist"),
		},
		{
			Config:      f.openebs("4.4.0", fmt.Sprintf("    hostpath_class_name = %q\n    volume_snapshot_crds = true", class), ""),
			ExpectError: acctest.ErrorWords("Set openebs.volume_snapshot_crds = false"),
		},
		{
			Config:      f.openebs("4.4.0", fmt.Sprintf("    hostpath_class_name = %q\n    mayastor_enabled = true", class), ""),
			ExpectError: acctest.ErrorWords(nodeName + ": no label openebs.io/engine=mayastor"),
		},
	}
	if len(nodes.Items) < 3 {
		steps = append(steps, resource.TestStep{
			PreConfig:   f.labelMayastorNodes,
			Config:      f.openebs("4.4.0", fmt.Sprintf("    hostpath_class_name = %q\n    mayastor_enabled = true", class), ""),
			ExpectError: acctest.ErrorWords(fmt.Sprintf("Mayastor's etcd runs 3 replicas, no two on one node (a hard pod anti-affinity), but the cluster has %d schedulable node(s)", len(nodes.Items))),
		})
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy:             f.checkReleaseGone("openebs"),
		Steps:                    steps,
	})
}

// foreignSnapshotCRD makes sure volumesnapshots.snapshot.storage.k8s.io exists without a Helm
// owner, as a snapshot controller's install leaves it; one the test made is deleted at its end.
func (f *fixture) foreignSnapshotCRD() {
	f.t.Helper()
	dyn, err := dynamic.NewForConfig(f.rc)
	if err != nil {
		f.t.Fatal(err)
	}
	crds := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	ctx := context.Background()
	if _, err := crds.Get(ctx, "volumesnapshots.snapshot.storage.k8s.io", metav1.GetOptions{}); err == nil {
		return
	}
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "volumesnapshots.snapshot.storage.k8s.io",
			"annotations": map[string]any{"api-approved.kubernetes.io": "https://github.com/kubernetes-csi/external-snapshotter/pull/814"}},
		"spec": map[string]any{
			"group": "snapshot.storage.k8s.io", "scope": "Namespaced",
			"names": map[string]any{"kind": "VolumeSnapshot", "listKind": "VolumeSnapshotList", "plural": "volumesnapshots", "singular": "volumesnapshot"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
		},
	}}
	made, err := crds.Create(ctx, crd, metav1.CreateOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	uid := made.GetUID()
	f.t.Cleanup(func() {
		if err := crds.Delete(context.Background(), made.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil {
			f.t.Logf("cleanup: deleting CRD %s: %v", made.GetName(), err)
		}
	})
}

// TestAccStorageBackend_snapshotCRDsKept: with volume_snapshot_crds (the chart's default), the
// openebs-crds subchart installs the VolumeSnapshot CRDs, and they stay after destroy
// (helm.sh/resource-policy: keep), as with the real chart; the fixture's cleanup removes them.
func TestAccStorageBackend_snapshotCRDsKept(t *testing.T) {
	acctest.RunsUnder(t, acctest.FirstCLIOnly)
	f := newFixture(t, acctest.LockSnapshotCRDs)
	dyn, err := dynamic.NewForConfig(f.rc)
	if err != nil {
		t.Fatal(err)
	}
	crds := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	if _, err := crds.Get(context.Background(), "volumesnapshots.snapshot.storage.k8s.io", metav1.GetOptions{}); err == nil {
		t.Skip("the cluster has the VolumeSnapshot CRDs already")
	}
	crdKept := func(*terraform.State) error {
		crd, err := crds.Get(context.Background(), "volumesnapshots.snapshot.storage.k8s.io", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if crd.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
			return fmt.Errorf("CRD %s is not kept on uninstall: %v", crd.GetName(), crd.GetAnnotations())
		}
		return nil
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy:             resource.ComposeTestCheckFunc(f.checkReleaseGone("openebs"), crdKept),
		Steps: []resource.TestStep{{
			Config: f.openebs("4.4.0", fmt.Sprintf("    hostpath_class_name = %q\n    volume_snapshot_crds = true", acctest.RandomName("acc-hostpath")), ""),
			Check:  crdKept,
		}},
	})
}
