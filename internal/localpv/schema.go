package localpv

import (
	"context"
	"fmt"
	"regexp"
	"strconv"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/setvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/setdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/setplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/validate"
)

// Schema describes clusterstorage_local_pv.
func (r *Resource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	replace := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	resp.Schema = schema.Schema{
		MarkdownDescription: "A local PersistentVolume pinned to one node, with its directory created on the node over SSH " +
			"(the provider's `ssh` block). Replaces the manual `mkdir`, `chmod`, PV manifest and node affinity. " +
			"Data is never deleted unless `delete_directory_on_destroy` (and, for a non-empty directory, " +
			"`force_delete_data`) says so.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed: true, MarkdownDescription: "The PersistentVolume name.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"name": schema.StringAttribute{
				Required: true, MarkdownDescription: "Name of the PersistentVolume (a DNS-1123 subdomain). Changing it replaces the volume.",
				Validators: []validator.String{validate.DNSSubdomain()}, PlanModifiers: replace,
			},
			"node": schema.StringAttribute{
				Required: true, MarkdownDescription: "Kubernetes node the directory lives on; the volume gets node affinity to it " +
					"(`kubernetes.io/hostname`). Changing it replaces the volume (the old directory stays).",
				Validators: []validator.String{stringvalidator.LengthAtLeast(1)}, PlanModifiers: replace,
			},
			"path": schema.StringAttribute{
				Required: true, MarkdownDescription: "Absolute, clean path of the directory on the node, e.g. `/mnt/disks/vol1`. " +
					"System directories (`/`, `/etc`, `/usr`, `/var/lib/kubelet`, the k3s data dir, ...) and control characters (newlines, tabs, NUL, ...) " +
					"are refused. Changing it replaces the volume.",
				Validators: []validator.String{validate.NodePath(), pathValidator{}}, PlanModifiers: replace,
			},
			"capacity": schema.StringAttribute{
				Required: true, MarkdownDescription: "Capacity the volume advertises, as a Kubernetes quantity (`10Gi`, `500M`). Kubernetes " +
					"does not enforce it for local volumes. Growing it is an in-place update; shrinking replaces the volume.",
				Validators:    []validator.String{quantityValidator{}},
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplaceIf(shrinks, "Shrinking a volume replaces it.", "Shrinking a volume replaces it.")},
			},
			"storage_class_name": schema.StringAttribute{
				Optional: true, MarkdownDescription: "StorageClass claims must name to bind this volume; usually a `kubernetes.io/no-provisioner` " +
					"class with `WaitForFirstConsumer`. Changing it replaces the volume.",
				Validators: []validator.String{validate.DNSSubdomain()}, PlanModifiers: replace,
			},
			"access_modes": schema.SetAttribute{
				ElementType: types.StringType, Optional: true, Computed: true,
				Default:             setdefault.StaticValue(types.SetValueMust(types.StringType, []attr.Value{types.StringValue(string(defaultAccessMode))})),
				MarkdownDescription: "Access modes: `ReadWriteOnce`, `ReadOnlyMany`, `ReadWriteMany`, `ReadWriteOncePod` (default: `[\"" + string(defaultAccessMode) + "\"]`). Changing them replaces the volume.",
				Validators: []validator.Set{setvalidator.SizeAtLeast(1), setvalidator.ValueStringsAre(
					stringvalidator.OneOf("ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod"))},
				PlanModifiers: []planmodifier.Set{setplanmodifier.RequiresReplace()},
			},
			"volume_mode": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString(string(defaultVolumeMode)),
				MarkdownDescription: "`Filesystem` or `Block` (default: `" + string(defaultVolumeMode) + "`). With `Block`, `path` is an existing block device and `create_directory` must be `false`. Changing it replaces the volume.",
				Validators:          []validator.String{stringvalidator.OneOf("Filesystem", "Block")}, PlanModifiers: replace,
			},
			"reclaim_policy": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString(string(defaultReclaimPolicy)),
				MarkdownDescription: "What Kubernetes does when the bound claim is deleted: `" + string(defaultReclaimPolicy) + "` (default) keeps the volume `Released` with its data. " +
					"`Delete` cannot delete a local volume (Kubernetes has no deleter for them): the volume becomes `Failed` and the data stays. Updated in place.",
				Validators: []validator.String{stringvalidator.OneOf("Retain", "Delete")},
			},
			"mount_options": schema.ListAttribute{
				ElementType: types.StringType, Optional: true,
				MarkdownDescription: "Mount options for the volume. Updated in place (used by the next mount).",
				Validators:          []validator.List{listvalidator.ValueStringsAre(stringvalidator.LengthAtLeast(1))},
			},
			"labels": schema.MapAttribute{
				ElementType: types.StringType, Optional: true,
				MarkdownDescription: "Labels of the PersistentVolume (claims can select on them). Only these keys are managed. Updated in place.",
				Validators:          []validator.Map{mapvalidator.KeysAre(validate.LabelKey())},
			},
			"node_affinity": schema.ListNestedAttribute{
				Optional: true,
				MarkdownDescription: "Extra node-affinity requirements, all of which must hold in addition to the node itself, " +
					"e.g. `{ key = \"disktype\", operator = \"In\", values = [\"nvme\"] }`. Changing them replaces the volume.",
				PlanModifiers: []planmodifier.List{listplanmodifier.RequiresReplace()},
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"key": schema.StringAttribute{Required: true, MarkdownDescription: "Node label key.", Validators: []validator.String{validate.LabelKey()}},
					"operator": schema.StringAttribute{Required: true, MarkdownDescription: "`In`, `NotIn`, `Exists`, `DoesNotExist`, `Gt` or `Lt`.",
						Validators: []validator.String{stringvalidator.OneOf("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")}},
					"values": schema.ListAttribute{ElementType: types.StringType, Optional: true,
						MarkdownDescription: "Values: one or more for `In`/`NotIn`, exactly one integer for `Gt`/`Lt`, none for `Exists`/`DoesNotExist`."},
				}},
			},
			"create_directory": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(defaultCreateDirectory),
				MarkdownDescription: "Create the directory on the node over SSH (default: `" + strconv.FormatBool(defaultCreateDirectory) + "`). With `false` the path must already exist; " +
					"the provider then never connects to the node.",
			},
			"directory_mode": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString(defaultDirectoryMode),
				MarkdownDescription: "Permission bits of the directory in octal (default: `" + defaultDirectoryMode + "`). A mode changed on the node shows as a diff and is put back in place.",
				Validators:          []validator.String{stringvalidator.RegexMatches(regexp.MustCompile(`^0?[0-7]{3,4}$`), "must be an octal mode such as `0755` or `2775`")},
			},
			"directory_owner": schema.StringAttribute{
				Optional: true, MarkdownDescription: "Owner of the directory, a user name or uid (default: the SSH user, usually root).",
				Validators: []validator.String{stringvalidator.RegexMatches(regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*$`), "must be a user name or a numeric uid")},
			},
			"directory_group": schema.StringAttribute{
				Optional: true, MarkdownDescription: "Group of the directory, a group name or gid.",
				Validators: []validator.String{stringvalidator.RegexMatches(regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*$`), "must be a group name or a numeric gid")},
			},
			"delete_directory_on_destroy": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(defaultDeleteDirectoryOnDestroy),
				MarkdownDescription: "Remove the directory when the volume is destroyed (default: `" + strconv.FormatBool(defaultDeleteDirectoryOnDestroy) + "`: the data stays on the node). " +
					"A directory that still holds files is only removed with `force_delete_data = true`.",
			},
			"force_delete_data": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(defaultForceDeleteData),
				MarkdownDescription: "With `delete_directory_on_destroy`, also remove a directory that still holds data, and all that data (default: `" + strconv.FormatBool(defaultForceDeleteData) + "`).",
			},
			"directory_exists": schema.BoolAttribute{
				Computed: true,
				MarkdownDescription: "Whether the directory was found on the node at the last refresh. When it went missing, the plan " +
					"shows it being created again (empty).",
			},
			"phase":    schema.StringAttribute{Computed: true, MarkdownDescription: "The volume's phase: `Available`, `Bound`, `Released` or `Failed`."},
			"claim":    schema.StringAttribute{Computed: true, MarkdownDescription: "`namespace/name` of the claim bound to the volume, or empty."},
			"timeouts": timeouts.Attributes(ctx, timeouts.Opts{Create: true, Delete: true}),
		},
	}
}

// shrinks asks for replacement when the planned capacity is below the current one.
func shrinks(_ context.Context, req planmodifier.StringRequest, resp *stringplanmodifier.RequiresReplaceIfFuncResponse) {
	if req.StateValue.IsNull() || req.PlanValue.IsUnknown() {
		return
	}
	current, err1 := k8sresource.ParseQuantity(req.StateValue.ValueString())
	planned, err2 := k8sresource.ParseQuantity(req.PlanValue.ValueString())
	resp.RequiresReplace = err1 == nil && err2 == nil && planned.Cmp(current) < 0
}

// pathValidator checks CheckPath's rules; characters are validate.NodePath's.
type pathValidator struct{}

func (pathValidator) Description(context.Context) string {
	return "an absolute, clean path outside system directories"
}
func (v pathValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }
func (pathValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() || validate.CheckNodePath(req.ConfigValue.ValueString()) != nil {
		return // validate.NodePath says what is wrong
	}
	if err := CheckPath(req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Unsafe or invalid path", err.Error()+".")
	}
}

type quantityValidator struct{}

func (quantityValidator) Description(context.Context) string {
	return "a positive Kubernetes quantity such as `10Gi`"
}
func (v quantityValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }
func (quantityValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	q, err := k8sresource.ParseQuantity(req.ConfigValue.ValueString())
	if err != nil || q.Sign() <= 0 {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid capacity",
			fmt.Sprintf("%q is not a positive Kubernetes quantity; write it like `10Gi` or `500M`.", req.ConfigValue.ValueString()))
	}
}
