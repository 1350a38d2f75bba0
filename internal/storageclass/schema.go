package storageclass

import (
	"context"
	"regexp"

	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/mapplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/validate"
)

// Schema describes clusterstorage_storage_class. Kubernetes forbids changing a class's
// provisioner, parameters, reclaim policy and binding mode, so those force replacement; the rest
// is updated in place.
func (r *Resource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "A Kubernetes StorageClass, including whether it is the cluster's default class. " +
			"Setting `default = true` also removes the default mark from every other class in the same apply, " +
			"so the cluster never has two defaults.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "The StorageClass name.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"name": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "Name of the StorageClass: a DNS-1123 subdomain (lower case, digits, `-` and `.`, at most 253 characters). Changing it replaces the class.",
				Validators:          []validator.String{validate.DNSSubdomain()},
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"storage_provisioner": schema.StringAttribute{
				Required: true,
				MarkdownDescription: "Volume provisioner, e.g. `kubernetes.io/no-provisioner` for local volumes, `openebs.io/local`, " +
					"`driver.longhorn.io`, `rancher.io/local-path`. Changing it replaces the class.",
				Validators: []validator.String{
					stringvalidator.RegexMatches(provisionerPattern, "must be a qualified name such as `openebs.io/local`: "+
						"an optional DNS subdomain prefix and `/`, then letters, digits, `-`, `_` or `.`"),
				},
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"parameters": schema.MapAttribute{
				ElementType:         types.StringType,
				Optional:            true,
				MarkdownDescription: "Parameters passed to the provisioner. Keys must not be empty. Changing them replaces the class.",
				Validators:          []validator.Map{mapvalidator.KeysAre(stringvalidator.LengthAtLeast(1))},
				PlanModifiers:       []planmodifier.Map{mapplanmodifier.RequiresReplace()},
			},
			"reclaim_policy": schema.StringAttribute{
				Optional:            true,
				Computed:            true,
				Default:             stringdefault.StaticString(string(defaultReclaimPolicy)),
				MarkdownDescription: "What happens to a dynamically provisioned volume when its claim is deleted: `Delete` or `Retain` (default: `" + string(defaultReclaimPolicy) + "`). Changing it replaces the class.",
				Validators:          []validator.String{stringvalidator.OneOf("Delete", "Retain")},
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"volume_binding_mode": schema.StringAttribute{
				Optional: true,
				Computed: true,
				Default:  stringdefault.StaticString(string(defaultVolumeBindingMode)),
				MarkdownDescription: "When volumes are bound: `Immediate` or `WaitForFirstConsumer` (default: `" + string(defaultVolumeBindingMode) + "`, as in Kubernetes). " +
					"Local volumes need `WaitForFirstConsumer` so the scheduler picks the node the volume lives on. Changing it replaces the class.",
				Validators:    []validator.String{stringvalidator.OneOf("Immediate", "WaitForFirstConsumer")},
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"allow_volume_expansion": schema.BoolAttribute{
				Optional:            true,
				Computed:            true,
				Default:             booldefault.StaticBool(false),
				MarkdownDescription: "Whether claims of this class may be resized (default: `false`). Updated in place.",
			},
			"mount_options": schema.ListAttribute{
				ElementType:         types.StringType,
				Optional:            true,
				MarkdownDescription: "Mount options of volumes provisioned from this class, e.g. `[\"noatime\"]`. Kubernetes does not check them: a wrong one makes the mount fail. Updated in place (applies to new volumes).",
				Validators:          []validator.List{listvalidator.ValueStringsAre(stringvalidator.LengthAtLeast(1))},
			},
			"allowed_topologies": schema.ListNestedAttribute{
				Optional: true,
				MarkdownDescription: "Where volumes of this class may be provisioned: a list of terms, any of which may match. " +
					"Updated in place (applies to new volumes).",
				Validators: []validator.List{listvalidator.SizeAtLeast(1)},
				NestedObject: schema.NestedAttributeObject{
					Attributes: map[string]schema.Attribute{
						"match_label_expressions": schema.ListNestedAttribute{
							Required:            true,
							MarkdownDescription: "Label requirements that must all hold, e.g. `{ key = \"kubernetes.io/hostname\", values = [\"node1\"] }`.",
							Validators:          []validator.List{listvalidator.SizeAtLeast(1)},
							NestedObject: schema.NestedAttributeObject{
								Attributes: map[string]schema.Attribute{
									"key": schema.StringAttribute{
										Required:            true,
										MarkdownDescription: "Label key, e.g. `topology.kubernetes.io/zone`.",
										Validators:          []validator.String{validate.LabelKey()},
									},
									"values": schema.ListAttribute{
										ElementType:         types.StringType,
										Required:            true,
										MarkdownDescription: "Accepted label values (at least one).",
										Validators: []validator.List{
											listvalidator.SizeAtLeast(1),
											listvalidator.ValueStringsAre(stringvalidator.LengthAtLeast(1)),
										},
									},
								},
							},
						},
					},
				},
			},
			"labels": schema.MapAttribute{
				ElementType: types.StringType,
				Optional:    true,
				MarkdownDescription: "Labels of the StorageClass. Only the keys set here are managed: labels added by other " +
					"tools are left alone and cause no diff.",
				Validators: []validator.Map{mapvalidator.KeysAre(validate.LabelKey())},
			},
			"annotations": schema.MapAttribute{
				ElementType: types.StringType,
				Optional:    true,
				MarkdownDescription: "Annotations of the StorageClass. Only the keys set here are managed. Use `default` instead " +
					"of the `storageclass.kubernetes.io/is-default-class` annotation.",
				Validators: []validator.Map{
					mapvalidator.KeysAre(validate.LabelKey()),
					noDefaultAnnotation{},
				},
			},
			"default": schema.BoolAttribute{
				Optional: true,
				Computed: true,
				Default:  booldefault.StaticBool(false),
				MarkdownDescription: "Whether this is the cluster's default StorageClass (default: `false`). When `true`, the " +
					"default mark is removed from every other class in the same apply, and a class marked default " +
					"outside Terraform later shows up as a diff here that the next apply corrects. Destroying the " +
					"default class leaves the cluster without a default; the previous default is not restored.",
			},
		},
	}
}

var provisionerPattern = regexp.MustCompile(`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`)

// noDefaultAnnotation refuses the default-class annotations: the `default` attribute owns them.
type noDefaultAnnotation struct{}

func (noDefaultAnnotation) Description(context.Context) string {
	return "must not set the default-class annotation (use `default`)"
}

func (v noDefaultAnnotation) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (noDefaultAnnotation) ValidateMap(_ context.Context, req validator.MapRequest, resp *validator.MapResponse) {
	for key := range req.ConfigValue.Elements() {
		if key == defaultClassAnnotation || key == betaDefaultClassAnnotation {
			resp.Diagnostics.AddAttributeError(req.Path.AtMapKey(key), "Use default instead",
				"The "+key+" annotation is managed by the `default` attribute: set `default = true` instead.")
		}
	}
}
