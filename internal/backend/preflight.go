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
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
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
// something is missing. For Mayastor only the nodes it runs on (labelled openebs.io/engine=mayastor)
// are checked.
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
		if s.Type == typeOpenEBS && !mayastorNode(n.Labels) {
			continue
		}
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

// What Mayastor's chart (mayastor-extensions 2.6 to 2.8 values.yaml) schedules on: io-engine only
// on nodes with these labels; etcd's pods never two on one node ("hard" anti-affinity).
var mayastorNodeSelector = map[string]string{"openebs.io/engine": "mayastor", "kubernetes.io/arch": "amd64"}

const keyMayastorEtcdAntiAffinity = "mayastor.etcd.podAntiAffinityPreset"

func mayastorNode(labels map[string]string) bool {
	for k, v := range mayastorNodeSelector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// CRDs a release of each engine makes that another release or tool may own already.
var (
	crdGVR          = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	snapshotCRDs    = []string{"volumesnapshotclasses.snapshot.storage.k8s.io", "volumesnapshotcontents.snapshot.storage.k8s.io", "volumesnapshots.snapshot.storage.k8s.io"}
	longhornCRDs    = []string{"settings.longhorn.io", "volumes.longhorn.io"}
	helmReleaseName = "meta.helm.sh/release-name"
	helmReleaseNS   = "meta.helm.sh/release-namespace"
)

// checkCluster checks through the API, before an install or upgrade with the given values,
// what would make it fail or never become ready: CRDs the chart would make that someone else
// owns, and for Mayastor the nodes its io-engine and etcd need. It runs whether or not
// `preflight` (the nodes' SSH checks) is on: it only reads the API.
func (r *Resource) checkCluster(ctx context.Context, client kubernetes.Interface, s spec, values map[string]any) diag.Diagnostics {
	var diags diag.Diagnostics
	var crds []string
	var remedy string
	switch {
	case s.Type == typeLonghorn:
		crds, remedy = longhornCRDs, "Only one Longhorn can be installed on a cluster: import that one (`terraform import`) or uninstall it first."
	case s.Type == typeOpenEBS && lookupBool(values, keySnapshotCRDs, true):
		crds, remedy = snapshotCRDs, "Set openebs.volume_snapshot_crds = false to use the CRDs the cluster has (the chart then leaves them alone)."
	}
	if len(crds) > 0 {
		if problems, err := r.foreignCRDs(ctx, s, crds); err != nil {
			diags.AddWarning("Checking for existing CRDs failed", err.Error())
		} else if len(problems) > 0 {
			diags.AddAttributeError(path.Root("type"), "CRDs of "+s.Type+" already exist",
				"The chart would create these CustomResourceDefinitions, but they exist and belong to something else, so Helm would fail "+
					"with an ownership error:\n  "+strings.Join(problems, "\n  ")+"\n"+remedy)
		}
	}
	if s.Type == typeOpenEBS && s.OpenEBS.MayastorEnabled {
		diags.Append(checkMayastorNodes(ctx, client, values)...)
	}
	return diags
}

// foreignCRDs describes each of the named CRDs that exists and is not this release's.
func (r *Resource) foreignCRDs(ctx context.Context, s spec, names []string) ([]string, error) {
	dyn, err := r.data.Kube.Dynamic()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, name := range names {
		crd, err := dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
		if kube.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		a := crd.GetAnnotations()
		owner := "not made by Helm"
		if a[helmReleaseName] != "" {
			if a[helmReleaseName] == s.ReleaseName && a[helmReleaseNS] == s.Namespace {
				continue
			}
			owner = "owned by Helm release " + a[helmReleaseNS] + "/" + a[helmReleaseName]
		}
		out = append(out, name+" ("+owner+")")
	}
	return out, nil
}

// checkMayastorNodes refuses a Mayastor install that cannot become ready: no node its io-engine
// runs on, or fewer schedulable nodes than etcd replicas under a hard anti-affinity.
func checkMayastorNodes(ctx context.Context, client kubernetes.Interface, values map[string]any) diag.Diagnostics {
	var diags diag.Diagnostics
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		diags.AddError("Listing nodes failed", err.Error())
		return diags
	}
	var labelled, unlabelled []string
	schedulable := 0
	for _, n := range nodes.Items {
		if !n.Spec.Unschedulable {
			schedulable++
		}
		if mayastorNode(n.Labels) {
			labelled = append(labelled, n.Name)
			continue
		}
		var missing []string
		for k, v := range mayastorNodeSelector {
			if n.Labels[k] != v {
				missing = append(missing, k+"="+v)
			}
		}
		sort.Strings(missing)
		unlabelled = append(unlabelled, fmt.Sprintf("%s: no label %s", n.Name, strings.Join(missing, ", ")))
	}
	sort.Strings(unlabelled)
	if len(labelled) == 0 {
		diags.AddAttributeError(path.Root("openebs").AtName("mayastor_enabled"), "No node for Mayastor",
			"Mayastor's io-engine runs only on nodes labelled openebs.io/engine=mayastor (on amd64), and no node is:\n  "+strings.Join(unlabelled, "\n  ")+
				"\nLabel each storage node (`kubectl label node <node> openebs.io/engine=mayastor`), or set mayastor_enabled = false.")
	}
	replicas := lookupInt(values, keyMayastorEtcdReplicas, 3)
	if lookupString(values, keyMayastorEtcdAntiAffinity, "hard") == "hard" && replicas > int64(schedulable) {
		diags.AddAttributeError(path.Root("openebs").AtName("mayastor_enabled"), "Too few nodes for Mayastor's etcd",
			fmt.Sprintf("Mayastor's etcd runs %d replicas, no two on one node (a hard pod anti-affinity), but the cluster has %d schedulable node(s), "+
				"so the install would never become ready. Add nodes, or run fewer replicas: "+
				"set = [{ name = \"%s\", value = \"%d\" }] (1 on a single node; etcd then has no redundancy).",
				replicas, schedulable, keyMayastorEtcdReplicas, schedulable))
	}
	return diags
}
