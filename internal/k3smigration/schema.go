package k3smigration

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/identityschema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/float64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/validate"
)

// IdentitySchema describes the migration's resource identity: node, source, target and
// switch_method (identityModel).
func (r *Resource) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	resp.IdentitySchema = identityschema.Schema{Attributes: map[string]identityschema.Attribute{
		"node":          identityschema.StringAttribute{RequiredForImport: true, Description: "Kubernetes node whose data directory moved."},
		"source":        identityschema.StringAttribute{OptionalForImport: true, Description: "The k3s data directory moved (default: `" + DefaultSource + "`)."},
		"target":        identityschema.StringAttribute{RequiredForImport: true, Description: "Where the data moved to."},
		"switch_method": identityschema.StringAttribute{OptionalForImport: true, Description: "How k3s was pointed at `target`: `symlink` (default), `config` or `bind_mount`."},
	}}
}

// Schema describes clusterstorage_k3s_data_dir_migration.
func (r *Resource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	replace := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	keep := []planmodifier.String{stringplanmodifier.UseStateForUnknown()}
	resp.Schema = schema.Schema{
		MarkdownDescription: "Moves a k3s node's data directory (`/var/lib/rancher/k3s`) to another disk over SSH, safely: " +
			"a first rsync copy while k3s runs, then stop (the unit, `k3s-killall.sh`, containerd shims still holding the directory), " +
			"a final delta copy, verification, the switch, start, and a health check through the Kubernetes API. " +
			"Any failure after the stop rolls back to the original directory, which the migration only reads until k3s is healthy on the copy; " +
			"what k3s wrote on the copy before a rollback is copied back, never discarded. On systemd nodes a node guard (a transient timer) " +
			"puts k3s back on the original by itself if the provider never comes back. " +
			"State is written only after success. Destroying only forgets the migration unless `restore_on_destroy` is set.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed: true, MarkdownDescription: "`<node>:<source>`.",
				PlanModifiers: keep,
			},
			"node": schema.StringAttribute{
				Required: true, MarkdownDescription: "Kubernetes node whose data directory moves; reached over SSH through the provider's `ssh` block " +
					"and `nodes` map. Changing it replaces the resource.",
				Validators: []validator.String{stringvalidator.LengthAtLeast(1)}, PlanModifiers: replace,
			},
			"source": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString(DefaultSource),
				MarkdownDescription: "The k3s data directory to move: an absolute, clean path holding k3s's `server/` or `agent/` (default: `" + DefaultSource + "`). " +
					"Changing it replaces the resource.",
				Validators: []validator.String{validate.NodePath(), absPath{}}, PlanModifiers: replace,
			},
			"target": schema.StringAttribute{
				Required: true, MarkdownDescription: "Where the data moves to: an absolute, clean path that does not exist or is an empty directory, " +
					"on the new disk, neither inside `source` nor holding it. Changing it replaces the resource.",
				Validators: []validator.String{validate.NodePath(), absPath{}}, PlanModifiers: replace,
			},
			"service": schema.StringAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: "The systemd unit to stop and start: `k3s` or `k3s-agent` (default: the one that is active). Changing it replaces the resource.",
				Validators:          []validator.String{stringvalidator.OneOf("k3s", "k3s-agent")},
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplaceIfConfigured(), stringplanmodifier.UseStateForUnknown()},
			},
			"switch_method": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString(string(MethodSymlink)),
				MarkdownDescription: "How k3s is pointed at `target` (default: `symlink`). `symlink`: `source` is renamed to a backup and replaced by a " +
					"symbolic link to `target`, so every absolute path k3s wrote (kubeconfigs, TLS paths, local-path volumes, `data/current`) keeps resolving. " +
					"`config`: `data-dir` is set in `config_file` (a unit that passes `--data-dir` is refused); the only method for a `source` that is itself a mount point, which is then left in place. `bind_mount`: `target` is bind-mounted on an " +
					"empty `source`, and the mount is added to `/etc/fstab`. Changing it replaces the resource.",
				Validators:    []validator.String{stringvalidator.OneOf(string(MethodSymlink), string(MethodConfig), string(MethodBindMount))},
				PlanModifiers: replace,
			},
			"config_file": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString(DefaultConfigFile),
				MarkdownDescription: "The k3s configuration file `switch_method = \"config\"` edits (default: `" + DefaultConfigFile + "`); its drop-ins `<config_file>.d/*.yaml` " +
					"are read too, and a drop-in that sets `data-dir` is refused (it would win over this file). Updated in place: with `config`, the new file must be the one " +
					"that sets k3s's `data-dir` to `target`.",
				Validators: []validator.String{validate.NodePath(), absPath{}},
			},
			"keep_backup": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(true),
				MarkdownDescription: "Keep the original directory, renamed to `<source>.pre-migration-<UTC time>` (default: `true`). With `false` it is " +
					"deleted once k3s is healthy on `target`. Updated in place: it only matters while migrating (and restoring: with `false` the restore removes `target`).",
			},
			"drain": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				MarkdownDescription: "Cordon the node and evict its pods through the API before k3s is stopped, and uncordon it afterwards, also after a " +
					"rollback (default: `false`). DaemonSet and mirror pods are left alone. Without it the node's pods lose their k3s (API, kubelet) for the downtime " +
					"and their containers are stopped. Updated in place: it only matters while migrating or restoring.",
			},
			"free_space_margin": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString("1Gi"),
				MarkdownDescription: "Free space `target`'s filesystem must have beyond the size of the data, as a quantity (`1Gi`, `500Mi`, `0`) " +
					"(default: `1Gi`). When `target` holds an unfinished copy from an earlier attempt, only the part not yet copied needs room. " +
					"Updated in place: it only matters while migrating or restoring.",
				Validators: []validator.String{quantity{}},
			},
			"restore_on_destroy": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				MarkdownDescription: "On destroy, move the data back to `source` with the same safe procedure (default: `false`: destroy only " +
					"forgets the migration, and k3s keeps running on `target`). Updated in place: it only matters at destroy. A `source` that is " +
					"itself a mount point (left in place by `config`) is not restored: destroy then fails before touching anything and says how to move back by hand.",
			},
			"measure_write_speed": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				MarkdownDescription: "Before the copy, measure sequential writes on both filesystems with fio (1 MiB blocks, 16 in flight, direct I/O, " +
					"10 s, a 256 MiB file) while k3s runs; needs fio on the node (default: `false`). Updated in place: it only matters at create.",
			},
			"carry_mounts": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				MarkdownDescription: "Carry filesystems mounted below `source` (a disk at `storage/` for local-path volumes, `server/` or `agent/` on disks of their own) " +
					"along as mounts: each is bind-mounted at the same place below `target` (its data is not copied), and the original mount is left as it is; " +
					"your fstab entries keep working after a reboot through the symlink, so this needs `switch_method = \"symlink\"` (default: `false`: a `source` " +
					"with filesystems mounted below it is refused, naming them). Updated in place.",
			},
			"source_write_bytes_per_second": schema.Float64Attribute{
				Computed: true, MarkdownDescription: "Sequential-write speed of `source`'s filesystem measured before the copy (with `measure_write_speed`).",
				PlanModifiers: []planmodifier.Float64{float64planmodifier.UseStateForUnknown()},
			},
			"target_write_bytes_per_second": schema.Float64Attribute{
				Computed: true, MarkdownDescription: "Sequential-write speed of `target`'s filesystem measured before the copy (with `measure_write_speed`).",
				PlanModifiers: []planmodifier.Float64{float64planmodifier.UseStateForUnknown()},
			},
			"backup_path": schema.StringAttribute{
				Computed: true, MarkdownDescription: "Where the original directory was kept (empty when `keep_backup = false`).",
				PlanModifiers: keep,
			},
			"bytes_copied": schema.Int64Attribute{
				Computed: true, MarkdownDescription: "File data transferred by both copies, in bytes.",
				PlanModifiers: []planmodifier.Int64{int64planmodifier.UseStateForUnknown()},
			},
			"files_copied": schema.Int64Attribute{
				Computed: true, MarkdownDescription: "Regular files in the verified copy.",
				PlanModifiers: []planmodifier.Int64{int64planmodifier.UseStateForUnknown()},
			},
			"downtime_seconds": schema.Float64Attribute{
				Computed: true, MarkdownDescription: "How long k3s was stopped: from the stop until it was healthy on `target`.",
				PlanModifiers: []planmodifier.Float64{float64planmodifier.UseStateForUnknown()},
			},
			"migrated_at": schema.StringAttribute{
				Computed: true, MarkdownDescription: "When the migration finished (RFC 3339, UTC).",
				PlanModifiers: keep,
			},
			"source_filesystem": schema.StringAttribute{
				Computed: true, MarkdownDescription: "The filesystem `source` was on, as seen at the migration (device, type, mount point, free space).",
				PlanModifiers: keep,
			},
			"target_filesystem": schema.StringAttribute{
				Computed: true, MarkdownDescription: "The filesystem `target` is on, as seen before the copy.",
				PlanModifiers: keep,
			},
			"timeouts": timeouts.Attributes(ctx, timeouts.Opts{Create: true, Delete: true}),
		},
	}
}

// absPath checks CheckPath's rules; characters are validate.NodePath's (CheckPath's own check of
// them stays for the values it sees at apply and import, and lib.sh checks again on the node).
type absPath struct{}

func (absPath) Description(context.Context) string { return "an absolute, clean path" }
func (v absPath) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}
func (absPath) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() || validate.CheckNodePath(req.ConfigValue.ValueString()) != nil {
		return // validate.NodePath says what is wrong
	}
	if err := CheckPath(req.Path.String(), req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid path", err.Error()+".")
	}
}

type quantity struct{}

func (quantity) Description(context.Context) string {
	return "a non-negative quantity such as `1Gi`"
}
func (v quantity) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }
func (quantity) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	q, err := k8sresource.ParseQuantity(req.ConfigValue.ValueString())
	if err != nil || q.Sign() < 0 {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid free space margin",
			fmt.Sprintf("%q is not a non-negative quantity; write it like `1Gi`, `500Mi` or `0`.", req.ConfigValue.ValueString()))
	}
}
