package volumemigration

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/api/resource"
)

type model struct {
	ID               types.String   `tfsdk:"id"`
	Namespace        types.String   `tfsdk:"namespace"`
	Claim            types.String   `tfsdk:"claim"`
	StorageClass     types.String   `tfsdk:"storage_class"`
	Size             types.String   `tfsdk:"size"`
	DeleteSource     types.Bool     `tfsdk:"delete_source"`
	RestoreOnDestroy types.Bool     `tfsdk:"restore_on_destroy"`
	Image            types.String   `tfsdk:"image"`
	ImagePullPolicy  types.String   `tfsdk:"image_pull_policy"`
	HostNetwork      types.Bool     `tfsdk:"host_network"`
	Timeouts         timeouts.Value `tfsdk:"timeouts"`
	SourceVolume     types.String   `tfsdk:"source_volume"`
	Volume           types.String   `tfsdk:"volume"`
	BytesCopied      types.Int64    `tfsdk:"bytes_copied"`
	FilesCopied      types.Int64    `tfsdk:"files_copied"`
	DowntimeSeconds  types.Float64  `tfsdk:"downtime_seconds"`
	MigratedAt       types.String   `tfsdk:"migrated_at"`
}

// spec is the plain form of the plan.
func (m model) spec() (Spec, error) {
	s := Spec{
		Namespace:    m.Namespace.ValueString(),
		Claim:        m.Claim.ValueString(),
		StorageClass: m.StorageClass.ValueString(),
		DeleteSource: m.DeleteSource.ValueBool(),
		Image:        m.Image.ValueString(),
		PullPolicy:   m.ImagePullPolicy.ValueString(),
		HostNetwork:  m.HostNetwork.ValueBool(),
	}
	if s.Image == "" {
		s.Image = DefaultImage
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
}

// resultOf is the Result recorded in a finished migration's progress.
func resultOf(p progress) Result {
	r := Result{SourceVolume: p.SourceVolume, TargetVolume: p.TargetVolume, Files: p.Files, Bytes: p.Bytes, Downtime: p.Downtime}
	if p.MigratedAt != nil {
		r.MigratedAt = *p.MigratedAt
	}
	return r
}
