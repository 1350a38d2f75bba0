package capacity

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/datasource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/catalog"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/validate"
)

// Schema describes clusterstorage_storage_capacity.
func (d *DataSource) Schema(ctx context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Reads how much space is free, and on what kind of disk, for one target: a directory on nodes (over SSH), " +
			"a StorageClass (what the cluster publishes it can still provision), or a storage backend (Longhorn's or OpenEBS hostpath's view per node). " +
			"Only reads; nothing is written anywhere. The typed results are meant for `precondition`, `postcondition` and `check` blocks. " +
			"Exactly one of `node_path`, `storage_class` and `backend` must be set.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "The target: `node_path:<path>`, `storage_class:<name>` or `backend:<type>/<namespace>`.",
			},
			"node_path": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Measure the filesystem holding this absolute path on each of `nodes`, over SSH (the provider's `ssh` block): " +
					"statfs numbers as `df` shows them, the mount, and the block devices behind it down to the disks. Symbolic links are followed. " +
					"A path that does not exist on a node is an error. Control characters (newlines, tabs, NUL, ...) are refused.",
				Validators: []validator.String{validate.NodePath(), pathValidator{}},
			},
			"storage_class": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Report what the cluster says this StorageClass can still provision: its `CSIStorageCapacity` objects " +
					"(summed per topology segment) and, for a `" + NoProvisioner + "` class, its `Available` PersistentVolumes. " +
					"`capacity_sources` says which of these the class has; the others are null.",
				Validators: []validator.String{validate.DNSSubdomain()},
			},
			"backend": schema.SingleNestedAttribute{
				Optional: true,
				MarkdownDescription: "Report a storage backend's capacity per node, as `clusterstorage_storage_backend` names it: for `longhorn`, " +
					"Longhorn's own view of its disks (`nodes.longhorn.io` status, in `longhorn_nodes`); for `openebs`, the filesystem of the hostpath " +
					"base path on each node over SSH (in `filesystems`; a base path not made yet is measured at its nearest existing parent).",
				Attributes: map[string]schema.Attribute{
					"type": schema.StringAttribute{
						Required:            true,
						MarkdownDescription: "Backend type: `" + strings.Join(catalog.BackendTypes, "` or `") + "`.",
						Validators:          []validator.String{stringvalidator.OneOf(catalog.BackendTypes...)},
					},
					"namespace": schema.StringAttribute{
						Required:            true,
						MarkdownDescription: "Namespace the backend is installed in (the Helm release's namespace).",
						Validators:          []validator.String{validate.DNSSubdomain()},
					},
					"base_path": schema.StringAttribute{
						Optional: true,
						MarkdownDescription: "OpenEBS only: the hostpath base path to measure (default: the `BasePath` of the release's hostpath " +
							"StorageClass, `" + catalog.OpenEBSDefaultBasePath + "` when it names none). An absolute path without control characters.",
						Validators: []validator.String{validate.NodePath(), pathValidator{}},
					},
				},
			},
			"nodes": schema.ListAttribute{
				Optional: true, ElementType: types.StringType,
				MarkdownDescription: "Kubernetes nodes to measure, for `node_path` and `backend` (default: every node; for Longhorn every node " +
					"it has an object for). Nodes are measured in parallel over the provider's shared SSH connections. A node the cluster does not have is an error.",
				Validators: []validator.List{
					listvalidator.SizeAtLeast(1), listvalidator.UniqueValues(),
					listvalidator.ValueStringsAre(stringvalidator.LengthBetween(1, 253)),
				},
			},
			"timeouts": timeouts.Attributes(ctx),

			"summary": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "What was found, in a few readable lines (sizes in IEC units).",
			},
			"filesystems": schema.MapNestedAttribute{
				Computed: true,
				MarkdownDescription: "Per node name, the filesystem holding `node_path` or the OpenEBS base path " +
					"(null for the other targets).",
				NestedObject: schema.NestedAttributeObject{Attributes: filesystemAttributes()},
			},
			"longhorn_nodes": schema.MapNestedAttribute{
				Computed:            true,
				MarkdownDescription: "Per node name, Longhorn's view of the node's disks (`backend` of type `longhorn`; null otherwise).",
				NestedObject:        schema.NestedAttributeObject{Attributes: longhornNodeAttributes()},
			},
			"totals": schema.SingleNestedAttribute{
				Computed:            true,
				MarkdownDescription: "Sums over the nodes measured, for `node_path` and `backend` (null for `storage_class`).",
				Attributes: map[string]schema.Attribute{
					"nodes":               computedInt("Number of nodes measured."),
					"size_bytes":          computedInt("Sum of the sizes (Longhorn: of `storage_maximum_bytes`)."),
					"used_bytes":          computedInt("Sum of the used bytes (Longhorn: maximum minus available)."),
					"available_bytes":     computedInt("Sum of the available bytes."),
					"min_available_bytes": computedInt("The least available on any one node: what a check that every node has room compares."),
					"min_available_node":  computedString("The node with the least available."),
					"scheduled_bytes":     computedInt("Longhorn: sum of the space scheduled to replicas (null otherwise)."),
				},
			},
			"class_provisioner": computedString("The StorageClass's provisioner (`storage_class` only)."),
			"capacity_sources": schema.ListAttribute{
				Computed: true, ElementType: types.StringType,
				MarkdownDescription: "What the StorageClass's capacity is known from: `" + SourceCSIStorageCapacity + "` and/or `" + SourceAvailableVolumes + "`. " +
					"Empty for a class the cluster publishes no capacity for (its `csi_storage_capacity` and `available_volumes` are null then); null for other targets.",
			},
			"csi_storage_capacity": schema.SingleNestedAttribute{
				Computed:            true,
				MarkdownDescription: "The class's `CSIStorageCapacity` objects, in every namespace, summed; null when there are none.",
				Attributes: map[string]schema.Attribute{
					"capacity_bytes":            computedInt("Sum of every object's `capacity`."),
					"maximum_volume_size_bytes": computedInt("Largest `maximumVolumeSize` of any object; null when none reports it."),
					"segments": schema.ListNestedAttribute{
						Computed:            true,
						MarkdownDescription: "One entry per topology segment (objects with the same `nodeTopology`), ordered by selector.",
						NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
							"selector": computedString("The segment's `nodeTopology` as a label selector (`\"\"` selects every node); " +
								"null for objects without a topology, which no node can use."),
							"match_labels": schema.MapAttribute{
								Computed: true, ElementType: types.StringType,
								MarkdownDescription: "The topology's `matchLabels` (e.g. `topology.kubernetes.io/zone`).",
							},
							"nodes": schema.ListAttribute{
								Computed: true, ElementType: types.StringType,
								MarkdownDescription: "The cluster's nodes in the segment.",
							},
							"capacity_bytes":            computedInt("Sum of the segment's objects' `capacity`."),
							"maximum_volume_size_bytes": computedInt("Largest `maximumVolumeSize` in the segment; null when none reports it."),
							"objects":                   computedInt("Number of CSIStorageCapacity objects in the segment."),
						}},
					},
				},
			},
			"available_volumes": schema.SingleNestedAttribute{
				Computed: true,
				MarkdownDescription: "For a `" + NoProvisioner + "` class, its PersistentVolumes in phase `Available` (Bound and Released ones are not counted); " +
					"null for other classes.",
				Attributes: map[string]schema.Attribute{
					"count":         computedInt("Number of Available volumes."),
					"total_bytes":   computedInt("Sum of their capacity."),
					"largest_bytes": computedInt("Capacity of the largest one: the biggest claim that can still bind."),
					"nodes": schema.MapNestedAttribute{
						Computed: true,
						MarkdownDescription: "Per node, the Available volumes a pod there could bind (by each volume's node affinity; " +
							"a volume without one counts on every node). Nodes without any are left out.",
						NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
							"count":         computedInt("Number of Available volumes on the node."),
							"total_bytes":   computedInt("Sum of their capacity."),
							"largest_bytes": computedInt("Capacity of the largest one."),
						}},
					},
				},
			},
		},
	}
}

// filesystemAttributes describe one node's filesystem.
func filesystemAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"path":          computedString("The path asked about."),
		"resolved_path": computedString("The path with every symbolic link resolved; when `exists` is false, the nearest existing parent that was measured."),
		"exists":        computedBool("Whether the path itself exists (always true for `node_path`, which must exist)."),
		"mount_point":   computedString("Mount point of the filesystem holding the path."),
		"device":        computedString("The mount's source, as `df` shows it (`/dev/mapper/vg-root`, `/dev/sda2`, `tmpfs`)."),
		"fs_type":       computedString("Filesystem type (`ext4`, `xfs`, `tmpfs`...)."),
		"read_only":     computedBool("Whether the filesystem is mounted read-only."),
		"size_bytes":    computedInt("Size, as `df -B1` shows it (`1B-blocks`)."),
		"used_bytes":    computedInt("Used bytes, as `df` shows them."),
		"available_bytes": computedInt("Bytes an unprivileged writer can still use, as `df` shows them (`Avail`: reserved blocks excluded). " +
			"Compare this in checks."),
		"used_percent":        computedInt("`df`'s `Use%`: used / (used + available), rounded up; null for a filesystem of size 0."),
		"inodes_total":        computedInt("Inodes, as `df -i` shows them."),
		"inodes_used":         computedInt("Used inodes."),
		"inodes_free":         computedInt("Free inodes."),
		"inodes_used_percent": computedInt("`df -i`'s `IUse%`, rounded up; null for a filesystem without an inode count (btrfs)."),
		"block_devices": schema.ListAttribute{
			Computed: true, ElementType: types.StringType,
			MarkdownDescription: "Kernel names of the block devices from the filesystem's device down to its disks, through " +
				"device-mapper (LVM, LUKS), md and partitions (`[\"dm-0\", \"sda3\", \"sda\"]`); empty for a filesystem without a block device (tmpfs, overlay, NFS).",
		},
		"disks": schema.ListNestedAttribute{
			Computed:            true,
			MarkdownDescription: "The whole disks at the bottom of `block_devices`, as sysfs describes them.",
			NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
				"name":         computedString("Kernel name (`sda`, `nvme0n1`, `vda`, `loop0`)."),
				"model":        computedString("Model string from sysfs; null when the device has none (virtio, loop)."),
				"rotational":   computedBool("The kernel's `queue/rotational` flag: true for spinning disks (virtual disks often claim it too)."),
				"nvme":         computedBool("Whether the disk is an NVMe namespace."),
				"read_only":    computedBool("The block device's read-only flag."),
				"removable":    computedBool("The block device's removable flag."),
				"size_bytes":   computedInt("Size of the whole disk."),
				"backing_file": computedString("A loop device's backing file; null otherwise."),
			}},
		},
		"rotational": computedBool("True when any disk behind the filesystem is rotational; null when no disk is behind it. " +
			"`rotational == false` is the check for \"on an SSD or NVMe\"."),
		"nvme": computedBool("True when every disk behind the filesystem is NVMe; null when no disk is behind it."),
	}
}

// longhornNodeAttributes describe one Longhorn node.
func longhornNodeAttributes() map[string]schema.Attribute {
	diskAttrs := map[string]schema.Attribute{
		"path":                    computedString("The disk's directory on the node."),
		"allow_scheduling":        computedBool("Whether replicas may be scheduled to the disk (spec)."),
		"storage_reserved_bytes":  computedInt("Space kept free for other uses (spec)."),
		"storage_maximum_bytes":   computedInt("Size of the disk's filesystem, as Longhorn saw it; null until Longhorn reports it."),
		"storage_available_bytes": computedInt("Free space on it, as Longhorn saw it; null until reported."),
		"storage_scheduled_bytes": computedInt("Space promised to replicas on it; null until reported."),
		"ready":                   computedBool("The disk's `Ready` condition; null when not set."),
		"schedulable":             computedBool("The disk's `Schedulable` condition; null when not set."),
	}
	return map[string]schema.Attribute{
		"ready":                   computedBool("The node's `Ready` condition; null when not set."),
		"schedulable":             computedBool("The node's `Schedulable` condition; null when not set."),
		"allow_scheduling":        computedBool("Whether replicas may be scheduled to the node (spec)."),
		"storage_maximum_bytes":   computedInt("Sum of the disks' `storage_maximum_bytes`."),
		"storage_available_bytes": computedInt("Sum of the disks' `storage_available_bytes`."),
		"storage_scheduled_bytes": computedInt("Sum of the disks' `storage_scheduled_bytes`."),
		"storage_reserved_bytes":  computedInt("Sum of the disks' `storage_reserved_bytes`."),
		"disks": schema.MapNestedAttribute{
			Computed:            true,
			MarkdownDescription: "Per Longhorn disk name.",
			NestedObject:        schema.NestedAttributeObject{Attributes: diskAttrs},
		},
	}
}

func computedInt(description string) schema.Int64Attribute {
	return schema.Int64Attribute{Computed: true, MarkdownDescription: description}
}

func computedString(description string) schema.StringAttribute {
	return schema.StringAttribute{Computed: true, MarkdownDescription: description}
}

func computedBool(description string) schema.BoolAttribute {
	return schema.BoolAttribute{Computed: true, MarkdownDescription: description}
}

// pathValidator checks that a node path is absolute; its characters are validate.NodePath's.
type pathValidator struct{}

func (pathValidator) Description(context.Context) string {
	return "an absolute path"
}

func (v pathValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (pathValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if err := checkPath(req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid path", err.Error())
	}
}

// checkPath reports why p is not absolute, or nil.
func checkPath(p string) error {
	if !strings.HasPrefix(p, "/") {
		return fmt.Errorf("%q must be an absolute path (starting with /)", p)
	}
	return nil
}
