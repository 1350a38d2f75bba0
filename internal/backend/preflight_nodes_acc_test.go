package backend_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
)

// TestAccStorageBackend_preflightPerNode: on the three-node cluster, with open-iscsi and the NFS
// client installed on node 2 only (Debian's packages, iscsid's socket started, as on a node made
// ready for Longhorn), Longhorn's preflight reaches every node over its own sshd and reports each
// on its own line: node 2 ok, nodes 1 and 3 without open-iscsi. Nothing is installed.
func TestAccStorageBackend_preflightPerNode(t *testing.T) {
	acctest.RunsUnder(t, acctest.FirstCLIOnly)
	nodes := acctest.RequireNodes(t, 3)
	f := newFixture(t, acctest.LockLonghorn)
	ready := nodes[1]
	if ready.MachineDir == "" {
		t.Fatalf("node %s is not a machine of its own in %s: the test installs packages on it", ready.Name, acctest.NodesFile())
	}
	for _, n := range []acctest.ClusterNode{nodes[0], nodes[2]} {
		if strings.TrimSpace(n.MustRun(t, `command -v iscsiadm || true`)) != "" {
			t.Fatalf("node %s has open-iscsi: the test needs nodes without it", n.Name)
		}
	}
	installISCSI(t, ready)
	config := acctest.ProviderConfigNodes(nodes...) + fmt.Sprintf(`
resource "clusterstorage_storage_backend" "test" {
  type       = "longhorn"
  repository = %q
  namespace  = %q
  preflight  = true
  longhorn = {
    default_class = false
  }
}
`, f.repo, f.ns)
	// One line per node, in name order; node 2's says ok and is followed by node 3's.
	report := regexp.MustCompile(acctest.ErrorWords(nodes[0].Name+": open-iscsi is not installed").String() + `[\s\S]*` +
		acctest.ErrorWords(ready.Name+": ok "+nodes[2].Name+": open-iscsi is not installed").String())
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy:             f.checkReleaseGone("longhorn"),
		Steps:                    []resource.TestStep{{Config: config, ExpectError: report}},
	})
}

// installISCSI installs open-iscsi and the NFS client on a machine node with dpkg, from the
// packages scripts/deps.sh downloads into bin/debs (bind-mounted into every machine node), so
// without the network, and starts iscsid's socket (the daemon itself needs the kernel's iSCSI
// module, which this kernel lacks). The test's cleanup purges every package it added.
func installISCSI(t *testing.T, n acctest.ClusterNode) {
	t.Helper()
	const list = `dpkg-query -W -f '${Package}\n'`
	before := strings.Fields(n.MustRun(t, list))
	t.Cleanup(func() {
		out, err := n.Run(t, list)
		if err != nil {
			t.Logf("cleanup: listing the packages of node %s: %v", n.Name, err)
			return
		}
		var added []string
		for _, p := range strings.Fields(out) {
			if !slices.Contains(before, p) {
				added = append(added, p)
			}
		}
		if len(added) == 0 {
			return
		}
		if _, err := n.RunWithin(t, 3*time.Minute, `systemctl stop iscsid.socket iscsid 2>/dev/null; DEBIAN_FRONTEND=noninteractive dpkg --purge "$@" >/dev/null`, added...); err != nil {
			t.Logf("cleanup: purging %v on node %s: %v", added, n.Name, err)
		}
	})
	_, err := n.RunWithin(t, 3*time.Minute, `set -e
ls "$1"/open-iscsi_*.deb "$1"/nfs-common_*.deb >/dev/null
DEBIAN_FRONTEND=noninteractive dpkg -i "$1"/*.deb >/dev/null
systemctl start iscsid.socket`, n.MachineBin(t)+"/debs")
	if err != nil {
		t.Fatalf("installing open-iscsi on node %s from bin/debs (scripts/deps.sh downloads them): %v", n.Name, err)
	}
}
