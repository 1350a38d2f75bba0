package backend_test

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
)

// TestAccStorageBackend_preflight checks the node (this machine, reached through a real sshd)
// before installing: Mayastor's hugepages and nvme_tcp, Longhorn's open-iscsi, are reported per
// node and stop the install; settings without prerequisites install.
func TestAccStorageBackend_preflight(t *testing.T) {
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
