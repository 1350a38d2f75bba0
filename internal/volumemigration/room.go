package volumemigration

// What the plan reads about room: what the target class can still provision, the free space
// where a class of directories (OpenEBS hostpath, rancher local-path) puts the new volume on its
// node, and what the source's files take on theirs. The last two are measured over the
// provider's ssh block (Measure, Hosts); without it, or when a measurement fails (logged), they
// are unknown and the checks that need them are skipped: an unknown room never refuses a plan.

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/capacity"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/catalog"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
	sshnode "github.com/clusterstorage/terraform-provider-clusterstorage/internal/node"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/volumes"
)

// usageScript measures what a directory's files take on its node (scripts/usage.sh).
//
//go:embed scripts/usage.sh
var usageScript string

const (
	// localPathProvisioner is rancher local-path's provisioner name (k3s, upstream's manifest);
	// its Helm chart names it cluster.local/<release>-local-path-provisioner unless told.
	localPathProvisioner = "rancher.io/local-path"
	// localPathConfigMap is the ConfigMap with local-path's config.json, in the namespace of its
	// provisioner: kube-system on k3s, local-path-storage with upstream's manifest and chart.
	localPathConfigMap = "local-path-config"
	// localPathDefaultNode is the nodePathMap entry for the nodes it does not name.
	localPathDefaultNode = "DEFAULT_PATH_FOR_NON_LISTED_NODES"
	// usageTimeout bounds measuring the source's files at plan (du over a large tree).
	usageTimeout = 20 * time.Second
)

// localPathNamespaces are where local-path's ConfigMap is looked for.
var localPathNamespaces = []string{"kube-system", "local-path-storage"}

// observeRoom reads what the target class can still provision, how much the new volume needs,
// the node of a local source volume, and what is measured over SSH (observeDirectories).
func (m *Migrator) observeRoom(ctx context.Context, in *planInput) error {
	room, err := capacity.ReadClass(ctx, m.Client, m.Spec.StorageClass)
	if err != nil {
		return fmt.Errorf("reading the room on StorageClass %s: %w", m.Spec.StorageClass, err)
	}
	in.Room = &room
	size := sourceSize(in.Claim)
	if m.Spec.Size != nil {
		size = *m.Spec.Size
	}
	in.Needed = size.Value()
	var source *corev1.PersistentVolume
	if name := in.Claim.Spec.VolumeName; name != "" {
		pv, err := m.Client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
		if err != nil && !kube.IsNotFound(err) {
			return fmt.Errorf("reading the source volume %s: %w", name, err)
		}
		if err == nil {
			source = pv
			in.SourceNode = m.nodeNamed(ctx, volumes.Node(pv))
		}
	}
	in.Unlimited = unlimitedClass(in.Class)
	m.observeHostPath(ctx, in)
	m.observeUsed(ctx, in, source)
	return nil
}

// unlimitedClass reports whether a class's volumes are directories whose size nothing holds
// them to: rancher local-path's, OpenEBS hostpath's without its XFS or ext4 quota. A volume of
// such a class holds what its filesystem has room for, whatever its size says.
func unlimitedClass(c *storagev1.StorageClass) bool {
	switch {
	case c == nil:
		return false
	case isLocalPath(c.Provisioner):
		return true
	case c.Provisioner != catalog.OpenEBSLocalProvisioner:
		return false
	}
	storageType, _, err := catalog.OpenEBSConfig(*c)
	if err != nil || storageType != "hostpath" {
		return false
	}
	var entries []map[string]any
	if err := yaml.Unmarshal([]byte(c.Annotations[catalog.OpenEBSConfigAnnotation]), &entries); err != nil {
		return false
	}
	for _, e := range entries {
		if name, _ := e["name"].(string); name == "XFSQuota" || name == "EXT4Quota" { //nolint:errcheck // not a string: not the entry
			if fmt.Sprint(e["enabled"]) == "true" {
				return false
			}
		}
	}
	return true
}

// isLocalPath reports whether provisioner is rancher local-path's: its own name, or the one its
// Helm chart gives it (cluster.local/<release name>, "local-path-provisioner" in it).
func isLocalPath(provisioner string) bool {
	return provisioner == localPathProvisioner ||
		strings.HasPrefix(provisioner, "cluster.local/") && strings.Contains(provisioner, "local-path-provisioner")
}

// roomNode is the node the new volume is to be on: target_node, else the source volume's node
// for a local source, else the node the workload's pod runs on (copyNode); "" when not known.
func roomNode(in *planInput) string {
	switch {
	case in.TargetNode != "":
		return in.TargetNode
	case in.SourceNode != "":
		return in.SourceNode
	}
	return copyNode(in.Workloads)
}

// observeHostPath measures the free space where a target class of directories puts the new
// volume on the node it is to be on (roomNode): an OpenEBS hostpath class's base path, or the
// paths rancher local-path's configuration gives that node for the class. Nothing is measured
// without Measure, for another class, or when no node is known; a configuration that gives the
// node no path is recorded (the provisioner would refuse); a measurement that fails is logged and
// leaves the room unknown (the apply's provisioning then says what is wrong).
func (m *Migrator) observeHostPath(ctx context.Context, in *planInput) {
	if m.Measure == nil || in.Class == nil {
		return
	}
	node := roomNode(in)
	if node == "" {
		return
	}
	var room *hostPathRoom
	switch {
	case in.Class.Provisioner == catalog.OpenEBSLocalProvisioner:
		storageType, base, err := catalog.OpenEBSConfig(*in.Class)
		if err != nil || storageType != "hostpath" {
			return // a class OpenEBS itself would reject is for its provisioner to report
		}
		room = &hostPathRoom{Kind: "an OpenEBS hostpath class", Node: node, Paths: []pathRoom{{Path: base}}, Quota: !in.Unlimited}
	case isLocalPath(in.Class.Provisioner):
		var err error
		if room, err = m.localPathRoom(ctx, in.Class, node); err != nil || room == nil {
			if err != nil {
				m.log("reading rancher local-path's configuration failed; its room is not checked", map[string]any{"error": err.Error()})
			}
			return
		}
	default:
		return
	}
	for i := range room.Paths {
		fs, err := m.Measure(ctx, node, room.Paths[i].Path)
		if err != nil {
			m.log("measuring the free space of the class's directory failed; its room is not checked", map[string]any{"node": node, "path": room.Paths[i].Path, "error": err.Error()})
			return
		}
		room.Paths[i].AvailableBytes = fs.AvailableBytes
	}
	in.HostPath = room
}

// localPathConfig is the part of rancher local-path's config.json that says where its volumes
// go: per node (nodePathMap), or on a filesystem every node shares; per class when
// storageClassConfigs names classes.
type localPathConfig struct {
	localPathClassConfig
	StorageClassConfigs map[string]localPathClassConfig `json:"storageClassConfigs"`
}

type localPathClassConfig struct {
	NodePathMap []struct {
		Node  string   `json:"node"`
		Paths []string `json:"paths"`
	} `json:"nodePathMap"`
	SharedFileSystemPath string `json:"sharedFileSystemPath"`
}

// localPathRoom reads where local-path puts a volume of class on node, as its provisioner picks
// it: the class's own configuration when storageClassConfigs has classes, the node's paths in
// nodePathMap (else the default entry's), the class's nodePath parameter when it names one of
// them; or the shared filesystem's path. nil when its ConfigMap is not found, or found in more
// than one namespace (which one the provisioner reads is not known), or the role may not read it.
func (m *Migrator) localPathRoom(ctx context.Context, class *storagev1.StorageClass, node string) (*hostPathRoom, error) {
	var found []*corev1.ConfigMap
	for _, ns := range localPathNamespaces {
		cm, err := m.Client.CoreV1().ConfigMaps(ns).Get(ctx, localPathConfigMap, metav1.GetOptions{})
		switch {
		case kube.IsNotFound(err):
		case apierrors.IsForbidden(err):
			m.log("not allowed to read rancher local-path's configuration; its room is not checked (examples/rbac/volume-migration.yaml has the rule)", map[string]any{"namespace": ns})
			return nil, nil
		case err != nil:
			return nil, fmt.Errorf("reading ConfigMap %s/%s: %w", ns, localPathConfigMap, err)
		default:
			found = append(found, cm)
		}
	}
	if len(found) != 1 {
		if len(found) > 1 {
			m.log("rancher local-path's configuration is in more than one namespace; its room is not checked", map[string]any{"namespaces": localPathNamespaces})
		}
		return nil, nil
	}
	where := found[0].Namespace + "/" + found[0].Name
	var cfg localPathConfig
	if err := json.Unmarshal([]byte(found[0].Data["config.json"]), &cfg); err != nil {
		return nil, fmt.Errorf("ConfigMap %s: config.json: %w", where, err)
	}
	room := &hostPathRoom{Kind: "a rancher local-path class", Node: node, Config: where}
	c := cfg.localPathClassConfig
	if len(cfg.StorageClassConfigs) > 0 {
		var ok bool
		if c, ok = cfg.StorageClassConfigs[class.Name]; !ok {
			room.NoPath = fmt.Sprintf("its storageClassConfigs do not name class %s: the provisioner refuses to make its volumes", class.Name)
			return room, nil
		}
	}
	if c.SharedFileSystemPath != "" && len(c.NodePathMap) == 0 {
		room.Paths = []pathRoom{{Path: c.SharedFileSystemPath}}
		return room, nil
	}
	var paths []string
	listed := false
	for _, e := range c.NodePathMap {
		if e.Node == node {
			paths, listed = e.Paths, true
		}
	}
	if !listed {
		for _, e := range c.NodePathMap {
			if e.Node == localPathDefaultNode {
				paths, listed = e.Paths, true
			}
		}
	}
	switch {
	case !listed:
		room.NoPath = fmt.Sprintf("its nodePathMap names neither node %s nor %s: the provisioner refuses to make a volume there", node, localPathDefaultNode)
		return room, nil
	case len(paths) == 0:
		room.NoPath = fmt.Sprintf("its nodePathMap gives node %s no path: the provisioner refuses to make a volume there", node)
		return room, nil
	}
	if want := class.Parameters["nodePath"]; want != "" {
		if !slices.Contains(paths, want) {
			room.NoPath = fmt.Sprintf("StorageClass %s asks for nodePath %s, which its nodePathMap does not give node %s (it gives %s): the provisioner refuses to make a volume there",
				class.Name, want, node, strings.Join(paths, ", "))
			return room, nil
		}
		paths = []string{want}
	}
	for _, p := range paths {
		room.Paths = append(room.Paths, pathRoom{Path: p})
	}
	return room, nil
}

// observeUsed measures what the source's files take, for a source volume that is a directory on
// its node (a local PV, a hostPath volume: OpenEBS hostpath, local-path), over the provider's
// ssh block: df's used bytes when the directory is a filesystem of its own, else du's. Unknown
// (logged) without it, for another volume, or when it fails or takes longer than usageTimeout.
func (m *Migrator) observeUsed(ctx context.Context, in *planInput, source *corev1.PersistentVolume) {
	path := nodePath(source)
	if m.Hosts == nil || path == "" || in.SourceNode == "" {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, usageTimeout)
	defer cancel()
	fail := func(err error) {
		m.log("measuring the source's files failed; the new volume's size is not checked against them", map[string]any{"node": in.SourceNode, "path": path, "error": err.Error()})
	}
	host, err := m.Hosts(ctx, in.SourceNode)
	if err != nil {
		fail(err)
		return
	}
	res, err := host.Run(ctx, sshnode.Script(usageScript, path))
	if err != nil {
		fail(err)
		return
	}
	used, err := parseUsage(string(res.Stdout))
	if err != nil {
		fail(err)
		return
	}
	used.Node, used.Path = in.SourceNode, path
	in.Used = &used
}

// parseUsage reads usage.sh's line ("df BYTES" or "du BYTES").
func parseUsage(out string) (sourceUsage, error) {
	how, n, ok := strings.Cut(strings.TrimSpace(out), " ")
	bytes, err := strconv.ParseInt(n, 10, 64)
	if !ok || err != nil || bytes < 0 || (how != "df" && how != "du") {
		return sourceUsage{}, fmt.Errorf("usage.sh printed %q", out)
	}
	return sourceUsage{Bytes: bytes, How: how}, nil
}
