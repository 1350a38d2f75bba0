package volumemigration

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The copy container's requests and limits unless resource_requests and resource_limits say
// otherwise: rsync's two processes (sender and receiver) with room for the checksums of the
// verification, and memory for about ten million files.
var (
	defaultRequests = map[string]string{"cpu": "100m", "memory": "128Mi"}
	defaultLimits   = map[string]string{"cpu": "2", "memory": "1Gi"}
)

// quantities is a map of quantities as a Terraform value.
func quantities(q map[string]string) types.Map {
	elems := make(map[string]attr.Value, len(q))
	for k, v := range q {
		elems[k] = types.StringValue(v)
	}
	return types.MapValueMust(types.StringType, elems)
}

// describeQuantities is q for a description: `cpu = "100m"`, `memory = "128Mi"`.
func describeQuantities(q map[string]string) string {
	parts := make([]string, 0, len(q))
	for _, k := range slices.Sorted(maps.Keys(q)) {
		parts = append(parts, fmt.Sprintf("`%s = %q`", k, q[k]))
	}
	return strings.Join(parts, ", ")
}

// resourceList is a map of quantities as a ResourceList; null or unknown (an import) is def.
func resourceList(m types.Map, def map[string]string) (corev1.ResourceList, error) {
	raw := def
	if !m.IsNull() && !m.IsUnknown() {
		raw = map[string]string{}
		for k, v := range m.Elements() {
			s, ok := v.(types.String)
			if !ok {
				return nil, fmt.Errorf("%s is not a string", k)
			}
			raw[k] = s.ValueString()
		}
	}
	out := corev1.ResourceList{}
	for k, v := range raw {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("%s = %q: %w", k, v, err)
		}
		out[corev1.ResourceName(k)] = q
	}
	return out, nil
}

// quantityMap checks that every value of a map is a Kubernetes quantity.
type quantityMap struct{}

func (quantityMap) Description(context.Context) string {
	return "every value must be a Kubernetes quantity, such as `500m` or `256Mi`"
}

func (v quantityMap) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v quantityMap) ValidateMap(ctx context.Context, req validator.MapRequest, resp *validator.MapResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	for k, e := range req.ConfigValue.Elements() {
		s, ok := e.(types.String)
		if !ok || s.IsUnknown() || s.IsNull() {
			continue
		}
		if _, err := resource.ParseQuantity(s.ValueString()); err != nil {
			resp.Diagnostics.AddAttributeError(req.Path.AtMapKey(k), "Invalid quantity", fmt.Sprintf("%q: %s.", s.ValueString(), v.Description(ctx)))
		}
	}
}

// identityModel is the migration's resource identity (Terraform 1.12+, OpenTofu 1.12+): the claim
// it moved, which a migration keeps for its life (changing either replaces it).
type identityModel struct {
	Namespace types.String `tfsdk:"namespace"`
	Claim     types.String `tfsdk:"claim"`
}

type model struct {
	ID                types.String   `tfsdk:"id"`
	Namespace         types.String   `tfsdk:"namespace"`
	Claim             types.String   `tfsdk:"claim"`
	StorageClass      types.String   `tfsdk:"storage_class"`
	TargetNode        types.String   `tfsdk:"target_node"`
	CrossNodeTransfer types.String   `tfsdk:"cross_node_transfer"`
	Size              types.String   `tfsdk:"size"`
	DeleteSource      types.Bool     `tfsdk:"delete_source"`
	RestoreOnDestroy  types.Bool     `tfsdk:"restore_on_destroy"`
	Image             types.String   `tfsdk:"image"`
	ImagePullPolicy   types.String   `tfsdk:"image_pull_policy"`
	HostNetwork       types.Bool     `tfsdk:"host_network"`
	ControllersPaused types.Bool     `tfsdk:"controllers_paused"`
	CopyXattrs        types.Bool     `tfsdk:"copy_xattrs"`
	ResourceRequests  types.Map      `tfsdk:"resource_requests"`
	ResourceLimits    types.Map      `tfsdk:"resource_limits"`
	Timeouts          timeouts.Value `tfsdk:"timeouts"`
	SourceVolume      types.String   `tfsdk:"source_volume"`
	Volume            types.String   `tfsdk:"volume"`
	BytesCopied       types.Int64    `tfsdk:"bytes_copied"`
	FilesCopied       types.Int64    `tfsdk:"files_copied"`
	DowntimeSeconds   types.Float64  `tfsdk:"downtime_seconds"`
	MigratedAt        types.String   `tfsdk:"migrated_at"`
}

// spec is the plain form of the plan.
func (m model) spec() (Spec, error) {
	s := Spec{
		Namespace:    m.Namespace.ValueString(),
		Claim:        m.Claim.ValueString(),
		StorageClass: m.StorageClass.ValueString(),
		TargetNode:   m.TargetNode.ValueString(),
		Transfer:     m.CrossNodeTransfer.ValueString(),
		DeleteSource: m.DeleteSource.ValueBool(),
		Image:        m.Image.ValueString(),
		PullPolicy:   m.ImagePullPolicy.ValueString(),
		HostNetwork:  m.HostNetwork.ValueBool(),

		ControllersPaused: m.ControllersPaused.ValueBool(),
		CopyXattrs:        m.CopyXattrs.ValueBool(),
	}
	if s.Image == "" {
		s.Image = DefaultImage
	}
	var err error
	if s.Resources.Requests, err = resourceList(m.ResourceRequests, defaultRequests); err != nil {
		return s, fmt.Errorf("resource_requests: %w", err)
	}
	if s.Resources.Limits, err = resourceList(m.ResourceLimits, defaultLimits); err != nil {
		return s, fmt.Errorf("resource_limits: %w", err)
	}
	if v := m.Size.ValueString(); v != "" {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return s, fmt.Errorf("size %q: %w", v, err)
		}
		s.Size = &q
	}
	return s, nil
}

// observed writes a finished migration's result into the model.
func (m *model) observed(r Result) {
	m.ID = types.StringValue(m.Namespace.ValueString() + "/" + m.Claim.ValueString())
	m.SourceVolume = types.StringValue(r.SourceVolume)
	m.Volume = types.StringValue(r.TargetVolume)
	m.BytesCopied = types.Int64Value(r.Bytes)
	m.FilesCopied = types.Int64Value(r.Files)
	m.DowntimeSeconds = types.Float64Value(r.Downtime)
	m.MigratedAt = types.StringValue(r.MigratedAt.UTC().Format(time.RFC3339))
}

// quantityValidator checks a Kubernetes quantity with a positive value.
type quantityValidator struct{}

func (quantityValidator) Description(context.Context) string {
	return "must be a Kubernetes quantity greater than zero, such as `20Gi` or `500M`"
}

func (v quantityValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v quantityValidator) ValidateString(ctx context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	q, err := resource.ParseQuantity(req.ConfigValue.ValueString())
	if err != nil || q.Sign() <= 0 {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid size", fmt.Sprintf("%q %s.", req.ConfigValue.ValueString(), v.Description(ctx)))
	}
}

// restoreNeedsSource refuses restore_on_destroy = true with delete_source = true: the move back
// needs the source volume that delete_source deletes.
type restoreNeedsSource struct{}

func (restoreNeedsSource) Description(context.Context) string {
	return "cannot be `true` with `delete_source = true`"
}

func (v restoreNeedsSource) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (restoreNeedsSource) ValidateBool(ctx context.Context, req validator.BoolRequest, resp *validator.BoolResponse) {
	if !req.ConfigValue.ValueBool() {
		return
	}
	var deleteSource types.Bool
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("delete_source"), &deleteSource)...)
	if deleteSource.ValueBool() {
		resp.Diagnostics.AddAttributeError(req.Path, "restore_on_destroy needs the source volume",
			"restore_on_destroy = true moves the claim back onto its source volume when the resource is destroyed, and delete_source = true deletes that volume. "+
				"Choose one: keep the source (delete_source = false) to be able to move back, or delete it and destroy without moving data.")
	}
}

// fillDefaults sets the optional attributes an import cannot know to their defaults.
func (m *model) fillDefaults() {
	m.DeleteSource = types.BoolValue(false)
	m.RestoreOnDestroy = types.BoolValue(false)
	m.Image = types.StringValue(DefaultImage)
	m.HostNetwork = types.BoolValue(false)
	m.ControllersPaused = types.BoolValue(false)
	m.CopyXattrs = types.BoolValue(false)
	m.CrossNodeTransfer = types.StringValue(transferAuto)
	m.ResourceRequests = quantities(defaultRequests)
	m.ResourceLimits = quantities(defaultLimits)
}

// resultOf is the Result recorded in a finished migration's progress.
func resultOf(p progress) Result {
	r := Result{SourceVolume: p.SourceVolume, TargetVolume: p.TargetVolume, Files: p.Files, Bytes: p.Bytes, Downtime: p.Downtime}
	if p.MigratedAt != nil {
		r.MigratedAt = *p.MigratedAt
	}
	return r
}
