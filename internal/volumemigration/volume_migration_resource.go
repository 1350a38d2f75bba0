// Package volumemigration implements clusterstorage_volume_migration: one claim moved to a new
// volume of another StorageClass, copied while the workload runs, then the delta and a
// verification with the workload stopped, the claim made again on the new volume under the same
// name. doc.go says how each step is made safe to interrupt.
package volumemigration

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/capacity"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/providerdata"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/volumes"
)

var (
	_ resource.ResourceWithConfigure   = &Resource{}
	_ resource.ResourceWithModifyPlan  = &Resource{}
	_ resource.ResourceWithImportState = &Resource{}
	_ resource.ResourceWithIdentity    = &Resource{}
)

// Default timeouts.
const (
	defaultCreateTimeout = 30 * time.Minute
	defaultUpdateTimeout = 5 * time.Minute
	defaultDeleteTimeout = 30 * time.Minute
)

// NewResource returns the clusterstorage_volume_migration resource.
func NewResource() resource.Resource {
	return &Resource{}
}

// Resource migrates one claim.
type Resource struct {
	data *providerdata.Data
}

// Metadata sets the type name.
func (r *Resource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_volume_migration"
}

// Configure receives the provider's shared clients.
func (r *Resource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.data = providerdata.From(req.ProviderData, &resp.Diagnostics)
}

// migrator is the Migrator of s. With the provider's SSH settings it measures the base path of an
// OpenEBS hostpath target class on the node the copy runs on.
func (r *Resource) migrator(client kubernetes.Interface, s Spec) *Migrator {
	m := &Migrator{Client: client, Spec: s}
	if r.data.SSHReady() {
		m.Measure = func(ctx context.Context, node, path string) (capacity.Filesystem, error) {
			host, err := r.data.Host(ctx, node)
			if err != nil {
				return capacity.Filesystem{}, err
			}
			return capacity.Probe(ctx, host, path, true)
		}
		m.Hosts = r.data.Host
	}
	return m
}

// ModifyPlan runs the checks at plan time, for a new migration whose cluster can be read.
func (r *Resource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() || !req.State.Raw.IsNull() || r.data == nil || r.data.Kube == nil {
		return
	}
	var plan model
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() || plan.Namespace.IsUnknown() || plan.Claim.IsUnknown() || plan.StorageClass.IsUnknown() {
		return
	}
	client, err := r.data.Kube.Typed()
	if err != nil {
		return // the cluster is not known yet (made in the same apply): the apply checks again
	}
	s, err := plan.spec()
	if err != nil {
		resp.Diagnostics.AddError("Invalid migration settings", err.Error())
		return
	}
	m := r.migrator(client, s)
	in, err := m.Observe(ctx)
	if err != nil {
		resp.Diagnostics.AddError("Reading claim "+m.ref()+" failed", err.Error())
		return
	}
	for _, p := range checkPlan(in) {
		resp.Diagnostics.AddAttributeError(path.Root(p.Attribute), p.Summary, p.Detail)
	}
	if p := m.planTransfer(ctx, r.data.SSHReady()); p != nil {
		resp.Diagnostics.AddAttributeError(path.Root(p.Attribute), p.Summary, p.Detail)
	}
	for _, p := range planWarnings(in) {
		resp.Diagnostics.AddAttributeWarning(path.Root(p.Attribute), p.Summary, p.Detail)
	}
}

// Create migrates the claim, or resumes what an interrupted apply left.
func (r *Resource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan model
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, diags := plan.Timeouts.Create(ctx, defaultCreateTimeout)
	resp.Diagnostics.Append(diags...)
	client := r.data.KubeClient(&resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	s, err := plan.spec()
	if err != nil {
		resp.Diagnostics.AddError("Invalid migration settings", err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	m := r.migrator(client, s)
	m.Log = func(msg string, fields map[string]any) { tflog.Info(ctx, msg, fields) }
	res, err := m.Run(ctx)
	if err != nil {
		resp.Diagnostics.AddError("Migrating claim "+m.ref()+" to StorageClass "+s.StorageClass+" failed", err.Error())
		return
	}
	if res.XattrFiles > 0 {
		resp.Diagnostics.AddAttributeWarning(path.Root("copy_xattrs"), "Extended attributes or ACLs were not copied",
			fmt.Sprintf("%d files of claim %s have extended attributes or POSIX ACLs, and the new volume has the files without them (copy_xattrs = false). "+
				"The source volume %s keeps them. If the workload needs them, move the claim back (restore_on_destroy) and migrate again with copy_xattrs = true.",
				res.XattrFiles, m.ref(), res.SourceVolume))
	}
	plan.observed(res)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	resp.Diagnostics.Append(setIdentity(ctx, resp.Identity, plan.Namespace.ValueString(), plan.Claim.ValueString())...)
}

// Read checks that the claim is still there and still on the class it was moved to. A claim
// that is gone removes the resource from state; one moved elsewhere since shows as a change of
// storage_class (a new migration).
func (r *Resource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state model
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	client := r.data.KubeClient(&resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	ns, name := state.Namespace.ValueString(), state.Claim.ValueString()
	// Set on every path, a removal too: Terraform 1.11 and older (and a state written before
	// identities) send none, and the framework requires one after each Read.
	resp.Diagnostics.Append(setIdentity(ctx, resp.Identity, ns, name)...)
	claim, err := client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
	if kube.IsNotFound(err) {
		// Deleted by a swap that was interrupted (a destroy moving it back): a volume records
		// the claim to make again, and the next destroy or apply makes it. Kept in state.
		s, serr := state.spec()
		if serr == nil {
			if p, perr := r.migrator(client, s).volumeProgress(ctx, nil, progress{}); perr == nil && !p.Phase.beforeSwap() && p.Phase != phaseDone {
				tflog.Warn(ctx, "the claim is gone in the middle of a swap; kept in state for the next run to make it again", map[string]any{"claim": ns + "/" + name, "volume": p.TargetVolume})
				resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
				return
			}
		}
		tflog.Info(ctx, "the migrated claim is gone; removing the migration from state", map[string]any{"claim": ns + "/" + name})
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		resp.Diagnostics.AddError("Reading claim "+ns+"/"+name+" failed", err.Error())
		return
	}
	p, err := progressOf(claim.Annotations)
	if err != nil {
		resp.Diagnostics.AddError("Reading claim "+ns+"/"+name+" failed", err.Error())
		return
	}
	if state.StorageClass.IsNull() || state.SourceVolume.IsNull() {
		// An import: everything from the record on the claim.
		if p.Phase != phaseDone {
			resp.Diagnostics.AddError("Importing the migration of claim "+ns+"/"+name+" failed",
				"The claim carries no finished migration (annotation "+AnnotationProgress+"); only a claim this resource migrated can be imported.")
			return
		}
		state.fillDefaults()
		state.observed(resultOf(p))
	}
	if class := volumes.ClassOf(claim); class != state.StorageClass.ValueString() {
		state.StorageClass = types.StringValue(class)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

// Update applies delete_source (deleting the kept source volume) and the settings that only
// matter to later runs.
func (r *Resource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state model
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, diags := plan.Timeouts.Update(ctx, defaultUpdateTimeout)
	resp.Diagnostics.Append(diags...)
	client := r.data.KubeClient(&resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if plan.DeleteSource.ValueBool() && !state.DeleteSource.ValueBool() {
		ref := plan.Namespace.ValueString() + "/" + plan.Claim.ValueString()
		err := DeleteSource(ctx, client, state.SourceVolume.ValueString(), ref, func(msg string, fields map[string]any) { tflog.Info(ctx, msg, fields) })
		if err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("delete_source"), "Deleting the source volume "+state.SourceVolume.ValueString()+" failed", err.Error())
			return
		}
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	// The same identity: Terraform 1.11 and older (and a state written before identities) send
	// none, and the framework requires one after the update.
	resp.Diagnostics.Append(setIdentity(ctx, resp.Identity, plan.Namespace.ValueString(), plan.Claim.ValueString())...)
}

// Delete forgets the migration: the claim stays on its new volume, the kept source volume stays.
// With restore_on_destroy it first moves the claim back onto the source volume.
func (r *Resource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state model
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if !state.RestoreOnDestroy.ValueBool() {
		tflog.Info(ctx, "forgetting the migration; no data is moved", map[string]any{"id": state.ID.ValueString(), "source_volume": state.SourceVolume.ValueString()})
		return
	}
	timeout, diags := state.Timeouts.Delete(ctx, defaultDeleteTimeout)
	resp.Diagnostics.Append(diags...)
	client := r.data.KubeClient(&resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	s, err := state.spec()
	if err != nil {
		resp.Diagnostics.AddError("Reading the migration's state failed", err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ref := s.Namespace + "/" + s.Claim
	s, done, err := RestoreSpec(ctx, client, s, state.SourceVolume.ValueString())
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("restore_on_destroy"), "Moving claim "+ref+" back failed", err.Error())
		return
	}
	if done {
		tflog.Info(ctx, "the claim is on its source volume already", map[string]any{"claim": ref, "volume": s.Volume})
		return
	}
	m := r.migrator(client, s)
	m.Log = func(msg string, fields map[string]any) { tflog.Info(ctx, "restore: "+msg, fields) }
	if _, err := m.Run(ctx); err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("restore_on_destroy"), "Moving claim "+ref+" back onto its source volume "+s.Volume+" failed", err.Error())
	}
}

// ImportState imports a finished migration by `<namespace>/<claim>`, or by an import block's
// identity (`{ namespace = ..., claim = ... }`, Terraform 1.12+, OpenTofu 1.12+).
func (r *Resource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	ns, name, ok := strings.Cut(req.ID, "/")
	if req.ID == "" && req.Identity != nil {
		var ident identityModel
		resp.Diagnostics.Append(req.Identity.Get(ctx, &ident)...)
		ns, name, ok = ident.Namespace.ValueString(), ident.Claim.ValueString(), true
	}
	if !ok || ns == "" || name == "" {
		resp.Diagnostics.AddError("Invalid import ID", "Import a migration by `<namespace>/<claim>`, or by an import block's `identity = { namespace = \"...\", claim = \"...\" }`; got "+req.ID+".")
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("namespace"), ns)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("claim"), name)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), ns+"/"+name)...)
	resp.Diagnostics.Append(setIdentity(ctx, resp.Identity, ns, name)...)
}

// setIdentity records the migration's identity in a response; Create, Read, Update and
// ImportState all set it. A nil identity (no identity in the response) is left alone.
func setIdentity(ctx context.Context, identity *tfsdk.ResourceIdentity, namespace, claim string) diag.Diagnostics {
	if identity == nil {
		return nil
	}
	return identity.Set(ctx, identityModel{Namespace: types.StringValue(namespace), Claim: types.StringValue(claim)})
}
