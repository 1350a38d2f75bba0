package backend

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/node"
)

// preflightScript prints what a node offers the storage engines, one key=value per line. It is
// constant text and takes no arguments.
const preflightScript = `
if command -v iscsiadm >/dev/null 2>&1 || [ -x /sbin/iscsiadm ] || [ -x /usr/sbin/iscsiadm ]; then echo iscsiadm=yes; else echo iscsiadm=no; fi
if pgrep -x iscsid >/dev/null 2>&1 || systemctl is-active --quiet iscsid 2>/dev/null || systemctl is-active --quiet iscsid.socket 2>/dev/null; then echo iscsid=yes; else echo iscsid=no; fi
if command -v mount.nfs4 >/dev/null 2>&1 || [ -x /sbin/mount.nfs4 ] || [ -x /usr/sbin/mount.nfs4 ]; then echo nfs4=yes; else echo nfs4=no; fi
awk '/^HugePages_Total:/ { t = $2 } /^Hugepagesize:/ { s = $2 } END { printf "hugepages_kib=%d\n", t * s }' /proc/meminfo
if [ -d /sys/module/nvme_tcp ]; then echo nvme_tcp=loaded; elif modinfo nvme_tcp >/dev/null 2>&1; then echo nvme_tcp=available; else echo nvme_tcp=missing; fi
`

// nodeFacts is what preflightScript found on one node.
type nodeFacts struct {
	ISCSIAdm, ISCSID, NFS4 bool
	HugepagesKiB           int64
	NVMeTCP                string // loaded, available (not loaded) or missing
}

func parseFacts(out string) nodeFacts {
	var f nodeFacts
	for _, line := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok {
			continue
		}
		switch k {
		case "iscsiadm":
			f.ISCSIAdm = v == "yes"
		case "iscsid":
			f.ISCSID = v == "yes"
		case "nfs4":
			f.NFS4 = v == "yes"
		case "hugepages_kib":
			f.HugepagesKiB, _ = strconv.ParseInt(v, 10, 64)
		case "nvme_tcp":
			f.NVMeTCP = v
		}
	}
	return f
}

const mayastorHugepagesKiB = 2 << 20 // 2 GiB

// problems lists what the backend needs and the node lacks.
func (s spec) problems(f nodeFacts) []string {
	var out []string
	switch s.Type {
	case typeLonghorn:
		if !f.ISCSIAdm {
			out = append(out, "open-iscsi is not installed (no iscsiadm; package open-iscsi or iscsi-initiator-utils)")
		}
		if !f.ISCSIAdm || !f.ISCSID {
			out = append(out, "iscsid is not running")
		}
		if !f.NFS4 {
			out = append(out, "no NFSv4 client (mount.nfs4; package nfs-common or nfs-utils), needed for RWX volumes and backups")
		}
	case typeOpenEBS:
		if !s.OpenEBS.MayastorEnabled {
			break
		}
		if f.HugepagesKiB < mayastorHugepagesKiB {
			out = append(out, fmt.Sprintf("%d MiB of hugepages: Mayastor needs at least 2048 MiB (e.g. vm.nr_hugepages = 1024 with 2 MiB pages)", f.HugepagesKiB>>10))
		}
		switch f.NVMeTCP {
		case "loaded":
		case "available":
			out = append(out, "kernel module nvme_tcp is not loaded (modprobe nvme_tcp, and add it to /etc/modules-load.d)")
		default:
			out = append(out, "kernel module nvme_tcp is not available (a kernel with NVMe over TCP is needed)")
		}
	}
	return out
}

// needsPreflight reports whether the backend's settings have node prerequisites to check.
func (s spec) needsPreflight() bool {
	return s.Type == typeLonghorn || (s.Type == typeOpenEBS && s.OpenEBS.MayastorEnabled)
}

// preflight checks every node over SSH before installing, and fails with a per-node report when
// something is missing.
func (r *Resource) preflight(ctx context.Context, client kubernetes.Interface, s spec) diag.Diagnostics {
	var diags diag.Diagnostics
	if !s.needsPreflight() {
		tflog.Info(ctx, "preflight: these settings have no node prerequisites", map[string]any{"type": s.Type})
		return diags
	}
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		diags.AddError("Preflight: listing nodes failed", err.Error())
		return diags
	}
	names := make([]string, 0, len(nodes.Items))
	for _, n := range nodes.Items {
		names = append(names, n.Name)
	}
	sort.Strings(names)
	var report []string
	failed := false
	for _, name := range names {
		host, err := r.data.Host(ctx, name)
		if err != nil {
			failed = true
			report = append(report, fmt.Sprintf("%s: cannot check: %v", name, err))
			continue
		}
		tflog.Debug(ctx, "preflight: checking node", map[string]any{"node": name})
		res, err := host.Run(ctx, node.Script(preflightScript))
		if err != nil {
			failed = true
			report = append(report, fmt.Sprintf("%s: cannot check: %v", name, err))
			continue
		}
		problems := s.problems(parseFacts(string(res.Stdout)))
		if len(problems) == 0 {
			report = append(report, name+": ok")
			continue
		}
		failed = true
		report = append(report, name+": "+strings.Join(problems, "; "))
	}
	text := strings.Join(report, "\n")
	if failed {
		diags.AddAttributeError(path.Root("preflight"), "Nodes are not ready for "+s.Type,
			"Preflight checked every node before installing:\n"+text+"\nFix the nodes, or set preflight = false to install anyway.")
		return diags
	}
	tflog.Info(ctx, "preflight passed", map[string]any{"report": text})
	return diags
}
