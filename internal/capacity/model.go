package capacity

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/datasource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/catalog"
)

// model is the data source's configuration and results.
type model struct {
	ID           types.String   `tfsdk:"id"`
	NodePath     types.String   `tfsdk:"node_path"`
	StorageClass types.String   `tfsdk:"storage_class"`
	Backend      types.Object   `tfsdk:"backend"`
	Nodes        types.List     `tfsdk:"nodes"`
	Timeouts     timeouts.Value `tfsdk:"timeouts"`

	Summary            types.String                 `tfsdk:"summary"`
	Filesystems        map[string]filesystemModel   `tfsdk:"filesystems"`
	LonghornNodes      map[string]longhornNodeModel `tfsdk:"longhorn_nodes"`
	Totals             *totalsModel                 `tfsdk:"totals"`
	Provisioner        types.String                 `tfsdk:"class_provisioner"`
	CapacitySources    []string                     `tfsdk:"capacity_sources"`
	CSIStorageCapacity *csiModel                    `tfsdk:"csi_storage_capacity"`
	AvailableVolumes   *availableModel              `tfsdk:"available_volumes"`
}

type backendModel struct {
	Type      types.String `tfsdk:"type"`
	Namespace types.String `tfsdk:"namespace"`
	BasePath  types.String `tfsdk:"base_path"`
}

type filesystemModel struct {
	Path              string      `tfsdk:"path"`
	ResolvedPath      string      `tfsdk:"resolved_path"`
	Exists            bool        `tfsdk:"exists"`
	MountPoint        string      `tfsdk:"mount_point"`
	Device            string      `tfsdk:"device"`
	FSType            string      `tfsdk:"fs_type"`
	ReadOnly          bool        `tfsdk:"read_only"`
	SizeBytes         int64       `tfsdk:"size_bytes"`
	UsedBytes         int64       `tfsdk:"used_bytes"`
	AvailableBytes    int64       `tfsdk:"available_bytes"`
	UsedPercent       *int64      `tfsdk:"used_percent"`
	InodesTotal       int64       `tfsdk:"inodes_total"`
	InodesUsed        int64       `tfsdk:"inodes_used"`
	InodesFree        int64       `tfsdk:"inodes_free"`
	InodesUsedPercent *int64      `tfsdk:"inodes_used_percent"`
	BlockDevices      []string    `tfsdk:"block_devices"`
	Disks             []diskModel `tfsdk:"disks"`
	Rotational        *bool       `tfsdk:"rotational"`
	NVMe              *bool       `tfsdk:"nvme"`
}

type diskModel struct {
	Name        string  `tfsdk:"name"`
	Model       *string `tfsdk:"model"`
	Rotational  bool    `tfsdk:"rotational"`
	NVMe        bool    `tfsdk:"nvme"`
	ReadOnly    bool    `tfsdk:"read_only"`
	Removable   bool    `tfsdk:"removable"`
	SizeBytes   int64   `tfsdk:"size_bytes"`
	BackingFile *string `tfsdk:"backing_file"`
}

type longhornNodeModel struct {
	Ready                 *bool                        `tfsdk:"ready"`
	Schedulable           *bool                        `tfsdk:"schedulable"`
	AllowScheduling       bool                         `tfsdk:"allow_scheduling"`
	StorageMaximumBytes   int64                        `tfsdk:"storage_maximum_bytes"`
	StorageAvailableBytes int64                        `tfsdk:"storage_available_bytes"`
	StorageScheduledBytes int64                        `tfsdk:"storage_scheduled_bytes"`
	StorageReservedBytes  int64                        `tfsdk:"storage_reserved_bytes"`
	Disks                 map[string]longhornDiskModel `tfsdk:"disks"`
}

type longhornDiskModel struct {
	Path                  string `tfsdk:"path"`
	AllowScheduling       bool   `tfsdk:"allow_scheduling"`
	StorageReservedBytes  int64  `tfsdk:"storage_reserved_bytes"`
	StorageMaximumBytes   *int64 `tfsdk:"storage_maximum_bytes"`
	StorageAvailableBytes *int64 `tfsdk:"storage_available_bytes"`
	StorageScheduledBytes *int64 `tfsdk:"storage_scheduled_bytes"`
	Ready                 *bool  `tfsdk:"ready"`
	Schedulable           *bool  `tfsdk:"schedulable"`
}

type totalsModel struct {
	Nodes             int64  `tfsdk:"nodes"`
	SizeBytes         int64  `tfsdk:"size_bytes"`
	UsedBytes         int64  `tfsdk:"used_bytes"`
	AvailableBytes    int64  `tfsdk:"available_bytes"`
	MinAvailableBytes int64  `tfsdk:"min_available_bytes"`
	MinAvailableNode  string `tfsdk:"min_available_node"`
	ScheduledBytes    *int64 `tfsdk:"scheduled_bytes"`
}

type csiModel struct {
	CapacityBytes          int64          `tfsdk:"capacity_bytes"`
	MaximumVolumeSizeBytes *int64         `tfsdk:"maximum_volume_size_bytes"`
	Segments               []segmentModel `tfsdk:"segments"`
}

type segmentModel struct {
	Selector               *string           `tfsdk:"selector"`
	MatchLabels            map[string]string `tfsdk:"match_labels"`
	Nodes                  []string          `tfsdk:"nodes"`
	CapacityBytes          int64             `tfsdk:"capacity_bytes"`
	MaximumVolumeSizeBytes *int64            `tfsdk:"maximum_volume_size_bytes"`
	Objects                int64             `tfsdk:"objects"`
}

type availableModel struct {
	Count        int64                       `tfsdk:"count"`
	TotalBytes   int64                       `tfsdk:"total_bytes"`
	LargestBytes int64                       `tfsdk:"largest_bytes"`
	Nodes        map[string]volumeStatsModel `tfsdk:"nodes"`
}

type volumeStatsModel struct {
	Count        int64 `tfsdk:"count"`
	TotalBytes   int64 `tfsdk:"total_bytes"`
	LargestBytes int64 `tfsdk:"largest_bytes"`
}

// targetKind is which of the three targets is set.
type targetKind string

const (
	targetNodePath     targetKind = "node_path"
	targetStorageClass targetKind = "storage_class"
	targetBackend      targetKind = "backend"
)

// request is the validated configuration.
type request struct {
	Kind    targetKind
	Path    string
	Class   string
	Backend backendSpec
	// Nodes is nil for every node.
	Nodes []string
}

type backendSpec struct {
	Type, Namespace, BasePath string
}

// ID is the data source's id for the request.
func (r request) ID() string {
	switch r.Kind {
	case targetNodePath:
		return "node_path:" + r.Path
	case targetStorageClass:
		return "storage_class:" + r.Class
	default:
		return "backend:" + r.Backend.Type + "/" + r.Backend.Namespace
	}
}

// anyUnknown reports whether a value validation needs is not known yet (at validation time).
func (m model) anyUnknown() bool {
	return m.NodePath.IsUnknown() || m.StorageClass.IsUnknown() || m.Backend.IsUnknown() || m.Nodes.IsUnknown()
}

// request checks the configuration as a whole and returns it as a request. Attribute validators
// have checked each value on its own.
func (m model) request(ctx context.Context) (request, diag.Diagnostics) {
	var diags diag.Diagnostics
	var r request
	var set []targetKind
	if !m.NodePath.IsNull() {
		set = append(set, targetNodePath)
		r.Kind, r.Path = targetNodePath, m.NodePath.ValueString()
	}
	if !m.StorageClass.IsNull() {
		set = append(set, targetStorageClass)
		r.Kind, r.Class = targetStorageClass, m.StorageClass.ValueString()
	}
	if !m.Backend.IsNull() {
		set = append(set, targetBackend)
		r.Kind = targetBackend
		var b backendModel
		diags.Append(m.Backend.As(ctx, &b, basetypes.ObjectAsOptions{})...)
		r.Backend = backendSpec{Type: b.Type.ValueString(), Namespace: b.Namespace.ValueString(), BasePath: b.BasePath.ValueString()}
		if !b.Type.IsUnknown() && r.Backend.BasePath != "" && r.Backend.Type != catalog.BackendOpenEBS {
			diags.AddAttributeError(path.Root("backend").AtName("base_path"), "base_path is for OpenEBS only",
				fmt.Sprintf("base_path names the OpenEBS hostpath directory to measure; a %s backend reports its own disks. Remove base_path.", r.Backend.Type))
		}
	}
	if len(set) != 1 {
		names := make([]string, 0, len(set))
		for _, k := range set {
			names = append(names, string(k))
		}
		if len(names) == 0 {
			names = append(names, "none")
		}
		where := path.Empty()
		if len(set) > 1 {
			where = path.Root(string(set[1]))
		}
		diags.AddAttributeError(where, "Exactly one target",
			fmt.Sprintf("Set exactly one of node_path, storage_class and backend (set: %s).", strings.Join(names, ", ")))
		return r, diags
	}
	if !m.Nodes.IsNull() {
		if r.Kind == targetStorageClass {
			diags.AddAttributeError(path.Root("nodes"), "nodes does not apply to storage_class",
				"nodes applies to node_path and backend only: a StorageClass's capacity is what the cluster publishes for it, already per topology segment and per node. Remove nodes.")
		}
		diags.Append(m.Nodes.ElementsAs(ctx, &r.Nodes, false)...)
	}
	return r, diags
}

// fromFilesystem converts a probed filesystem.
func fromFilesystem(f Filesystem) filesystemModel {
	out := filesystemModel{
		Path: f.Path, ResolvedPath: f.ResolvedPath, Exists: f.Exists, MountPoint: f.MountPoint, Device: f.Device,
		FSType: f.FSType, ReadOnly: f.ReadOnly, SizeBytes: f.SizeBytes, UsedBytes: f.UsedBytes,
		AvailableBytes: f.AvailableBytes, UsedPercent: f.UsedPercent, InodesTotal: f.InodesTotal,
		InodesUsed: f.InodesUsed, InodesFree: f.InodesFree, InodesUsedPercent: f.InodesUsedPercent,
		BlockDevices: append([]string{}, f.BlockDevices...), Disks: []diskModel{},
		Rotational: f.Rotational(), NVMe: f.NVMe(),
	}
	for _, d := range f.Disks {
		out.Disks = append(out.Disks, diskModel{
			Name: d.Name, Model: nonEmpty(d.Model), Rotational: d.Rotational, NVMe: d.NVMe, ReadOnly: d.ReadOnly,
			Removable: d.Removable, SizeBytes: d.SizeBytes, BackingFile: nonEmpty(d.BackingFile),
		})
	}
	return out
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// setFilesystems fills filesystems and totals from what each node said.
func (m *model) setFilesystems(fss map[string]Filesystem) {
	m.Filesystems = map[string]filesystemModel{}
	t := &totalsModel{}
	for _, name := range sortedKeys(fss) {
		f := fss[name]
		m.Filesystems[name] = fromFilesystem(f)
		t.add(name, f.SizeBytes, f.UsedBytes, f.AvailableBytes)
	}
	m.Totals = t
}

// setLonghorn fills longhorn_nodes and totals.
func (m *model) setLonghorn(nodes map[string]LonghornNode) {
	m.LonghornNodes = map[string]longhornNodeModel{}
	t := &totalsModel{ScheduledBytes: new(int64)}
	for _, name := range sortedKeys(nodes) {
		n := nodes[name]
		maximum, available, scheduled, reserved := n.Sum()
		out := longhornNodeModel{
			Ready: n.Ready, Schedulable: n.Schedulable, AllowScheduling: n.AllowScheduling,
			StorageMaximumBytes: maximum, StorageAvailableBytes: available, StorageScheduledBytes: scheduled,
			StorageReservedBytes: reserved, Disks: map[string]longhornDiskModel{},
		}
		for dn, d := range n.Disks {
			out.Disks[dn] = longhornDiskModel{
				Path: d.Path, AllowScheduling: d.AllowScheduling, StorageReservedBytes: d.StorageReserved,
				StorageMaximumBytes: d.StorageMaximum, StorageAvailableBytes: d.StorageAvailable,
				StorageScheduledBytes: d.StorageScheduled, Ready: d.Ready, Schedulable: d.Schedulable,
			}
		}
		m.LonghornNodes[name] = out
		t.add(name, maximum, maximum-available, available)
		*t.ScheduledBytes += scheduled
	}
	m.Totals = t
}

func (t *totalsModel) add(node string, size, used, available int64) {
	if t.Nodes == 0 || available < t.MinAvailableBytes {
		t.MinAvailableBytes, t.MinAvailableNode = available, node
	}
	t.Nodes++
	t.SizeBytes += size
	t.UsedBytes += used
	t.AvailableBytes += available
}

// setClass fills the storage_class results.
func (m *model) setClass(c ClassCapacity) {
	m.Provisioner = types.StringValue(c.Provisioner)
	m.CapacitySources = c.Sources()
	if c.CSI != nil {
		out := &csiModel{CapacityBytes: c.CSI.CapacityBytes, MaximumVolumeSizeBytes: c.CSI.MaximumVolumeSizeBytes, Segments: []segmentModel{}}
		for _, s := range c.CSI.Segments {
			labels := s.MatchLabels
			if labels == nil {
				labels = map[string]string{}
			}
			out.Segments = append(out.Segments, segmentModel{
				Selector: s.Selector, MatchLabels: labels, Nodes: s.Nodes, CapacityBytes: s.CapacityBytes,
				MaximumVolumeSizeBytes: s.MaximumVolumeSizeBytes, Objects: s.Objects,
			})
		}
		m.CSIStorageCapacity = out
	}
	if c.Available != nil {
		out := &availableModel{Count: c.Available.Count, TotalBytes: c.Available.TotalBytes, LargestBytes: c.Available.LargestBytes, Nodes: map[string]volumeStatsModel{}}
		for n, s := range c.AvailableByNode {
			out.Nodes[n] = volumeStatsModel(s)
		}
		m.AvailableVolumes = out
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
