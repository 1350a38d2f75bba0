package k3smigration

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/node"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/providerdata"
)

var (
	_ resource.ResourceWithConfigure      = &Resource{}
	_ resource.ResourceWithImportState    = &Resource{}
	_ resource.ResourceWithValidateConfig = &Resource{}
	_ resource.ResourceWithIdentity       = &Resource{}
)

const (
	defaultCreateTimeout = 60 * time.Minute
	defaultDeleteTimeout = 60 * time.Minute
)

// NewResource returns the clusterstorage_k3s_data_dir_migration resource.
func NewResource() resource.Resource {
	return &Resource{}
}

// Resource moves a k3s data directory.
type Resource struct {
	data *providerdata.Data
}

// Metadata sets the type name.
func (r *Resource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_k3s_data_dir_migration"
}

// Configure receives the provider's shared clients and node access.
func (r *Resource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.data = providerdata.From(req.ProviderData, &resp.Diagnostics)
}

// ValidateConfig checks source and target together (different, neither inside the other), and
// that carry_mounts comes with the symlink method.
func (r *Resource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var m model
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() || m.Source.IsUnknown() || m.Target.IsUnknown() || m.Target.IsNull() {
		return
	}
	source := m.Source.ValueString()
	if m.Source.IsNull() {
		source = DefaultSource
	}
	if CheckPath("source", source) != nil || CheckPath("target", m.Target.ValueString()) != nil {
		return // the attribute validators say what is wrong
	}
	if err := CheckPaths(source, m.Target.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("target"), "Invalid target", err.Error()+".")
	}
	if m.CarryMounts.ValueBool() && !m.SwitchMethod.IsUnknown() && !m.SwitchMethod.IsNull() && m.SwitchMethod.ValueString() != string(MethodSymlink) {
		resp.Diagnostics.AddAttributeError(path.Root("carry_mounts"), "carry_mounts needs switch_method = \"symlink\"",
			fmt.Sprintf("Filesystems carried along stay mounted below %s in your fstab; only the symlink keeps those mount points resolving to the new "+
				"directory after a reboot. Use switch_method = \"symlink\", or move those mounts yourself and leave carry_mounts unset.", source))
	}
}

// Create runs the migration; state is written only when it succeeded.
func (r *Resource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan model
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, diags := plan.Timeouts.Create(ctx, defaultCreateTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	spec, err := plan.spec()
	if err != nil {
		addSpecError(&resp.Diagnostics, err, "configuration", "Correct it in the configuration and apply again; nothing was changed on the node.")
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	nodeName := plan.Node.ValueString()
	host, hooks, ok := r.connect(ctx, nodeName, plan.Drain.ValueBool(), &resp.Diagnostics)
	if !ok {
		return
	}
	tflog.Info(ctx, "migrating the k3s data dir", map[string]any{"node": nodeName, "source": spec.Source, "target": spec.Target, "switch_method": string(spec.Method)})
	res, err := migrateHook(ctx, host, spec, hooks)
	if err != nil {
		resp.Diagnostics.AddError(fmt.Sprintf("Migrating the k3s data dir on %s failed", nodeName), err.Error())
		return
	}
	for _, w := range res.Warnings {
		resp.Diagnostics.AddWarning("k3s data dir migration", w)
	}
	if plan.RestoreOnDestroy.ValueBool() && res.LeftInPlace(spec) {
		resp.Diagnostics.AddAttributeWarning(path.Root("restore_on_destroy"), "restore_on_destroy cannot restore into a mount point",
			fmt.Sprintf("%s is a mount point and was left in place, so a destroy with restore_on_destroy = true will refuse to move the data back "+
				"(k3s keeps running on %s) and say how to do it by hand.", spec.Source, spec.Target))
	}
	plan.observed(res)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	resp.Diagnostics.Append(resp.Identity.Set(ctx, plan.identity())...)
}

// migrateHook runs the migration; tests replace it to add fault hooks.
var migrateHook = Migrate

// Read checks that k3s still uses the target; when it does not (a revert by hand), the
// resource is removed from state so that the plan shows the migration again.
func (r *Resource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state model
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	// Set on every path, a removal or a state kept as it was too: Terraform 1.11 and older (and a
	// state written before identities) send none, and the framework requires one after each Read.
	resp.Diagnostics.Append(resp.Identity.Set(ctx, state.identity())...)
	nodeName := state.Node.ValueString()
	spec, err := state.spec()
	if err != nil {
		addSpecError(&resp.Diagnostics, err, "state", stateFix(nodeName))
		return
	}
	host, err := r.data.Host(ctx, nodeName)
	var st State
	if err == nil {
		st, err = ReadState(ctx, host, spec)
	}
	if err != nil {
		resp.Diagnostics.AddWarning("Could not check the k3s data dir",
			fmt.Sprintf("Whether k3s on %s still uses %s could not be checked: %v. The state was kept as it was.", nodeName, spec.Target, err))
		return
	}
	if !st.InUse {
		tflog.Warn(ctx, "k3s no longer uses the migrated directory; removing the migration from state", map[string]any{"node": nodeName, "reason": st.Reason})
		resp.Diagnostics.AddWarning("k3s data dir migration was reverted",
			fmt.Sprintf("On %s, %s. The migration is planned again.", nodeName, st.Reason))
		resp.State.RemoveResource(ctx)
		return
	}
	if state.ID.IsNull() || state.ID.ValueString() == "" {
		state.ID = types.StringValue(nodeName + ":" + spec.Source)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

// Update changes the settings that only matter while migrating or restoring (drain, keep_backup,
// free_space_margin, measure_write_speed, carry_mounts, config_file, restore_on_destroy, timeouts):
// the node is not touched, except that with switch_method = "config" a new config_file must be
// one that points k3s at the target. node, source, target, service and switch_method replace.
func (r *Resource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state model
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	spec, err := plan.spec()
	if err != nil {
		addSpecError(&resp.Diagnostics, err, "configuration", "Correct it in the configuration and apply again; nothing was changed.")
		return
	}
	if spec.Method == MethodConfig && !plan.ConfigFile.Equal(state.ConfigFile) {
		nodeName := plan.Node.ValueString()
		host, err := r.data.Host(ctx, nodeName)
		var st State
		if err == nil {
			st, err = ReadState(ctx, host, spec)
		}
		switch {
		case err != nil:
			resp.Diagnostics.AddAttributeError(path.Root("config_file"), "Cannot check config_file on "+nodeName,
				fmt.Sprintf("Whether %s sets data-dir to %s could not be checked: %v. Nothing was changed.", spec.ConfigFile, spec.Target, err))
			return
		case !st.InUse:
			resp.Diagnostics.AddAttributeError(path.Root("config_file"), "config_file does not point k3s at the target",
				fmt.Sprintf("On %s, %s. With switch_method = \"config\", config_file must name the file that sets k3s's data-dir to %s; "+
					"keep %s, or set data-dir in the new file first. Nothing was changed.", nodeName, st.Reason, spec.Target, state.ConfigFile.ValueString()))
			return
		}
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	resp.Diagnostics.Append(resp.Identity.Set(ctx, plan.identity())...)
}

// Delete forgets the migration, or with restore_on_destroy moves the data back first.
func (r *Resource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state model
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	nodeName := state.Node.ValueString()
	if !state.RestoreOnDestroy.ValueBool() {
		tflog.Info(ctx, "forgetting the k3s data dir migration; k3s keeps running on the target", map[string]any{"node": nodeName, "target": state.Target.ValueString()})
		return
	}
	timeout, diags := state.Timeouts.Delete(ctx, defaultDeleteTimeout)
	resp.Diagnostics.Append(diags...)
	spec, err := state.spec()
	if err != nil {
		addSpecError(&resp.Diagnostics, err, "state", stateFix(nodeName)+" Nothing was restored.")
	}
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	host, hooks, ok := r.connect(ctx, nodeName, state.Drain.ValueBool(), &resp.Diagnostics)
	if !ok {
		return
	}
	st, err := ReadState(ctx, host, spec)
	if err != nil {
		resp.Diagnostics.AddError("Checking the k3s data dir on "+nodeName+" failed", err.Error()+" Nothing was changed.")
		return
	}
	if !st.InUse {
		tflog.Warn(ctx, "k3s no longer uses the migrated directory: nothing to restore", map[string]any{"reason": st.Reason})
		return
	}
	tflog.Info(ctx, "restoring the k3s data dir", map[string]any{"node": nodeName, "from": spec.Target, "to": spec.Source})
	res, err := Restore(ctx, host, spec, hooks)
	if err != nil {
		resp.Diagnostics.AddError(fmt.Sprintf("Restoring the k3s data dir on %s failed", nodeName), err.Error())
		return
	}
	for _, w := range res.Warnings {
		resp.Diagnostics.AddWarning("k3s data dir restore", w)
	}
}

// ImportState takes "<node>,<source>,<target>[,<switch_method>]", or an import block's identity
// (`{ node = ..., target = ... }`, source and switch_method optional); Read then checks the node.
func (r *Resource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	nodeName, source, target, method, err := parseImportID(req.ID)
	if req.ID == "" && req.Identity != nil {
		var ident identityModel
		if resp.Diagnostics.Append(req.Identity.Get(ctx, &ident)...); resp.Diagnostics.HasError() {
			return
		}
		nodeName, source, target, method, err = parseImportIdentity(ident)
	}
	if err != nil {
		resp.Diagnostics.AddError("Invalid import ID", err.Error())
		return
	}
	for name, v := range map[string]any{
		"id": nodeName + ":" + source, "node": nodeName, "source": source, "target": target, "switch_method": string(method),
		"config_file": DefaultConfigFile, "keep_backup": true, "drain": false, "free_space_margin": "1Gi", "restore_on_destroy": false,
		"measure_write_speed": false, "carry_mounts": false,
	} {
		resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root(name), v)...)
	}
	resp.Diagnostics.Append(resp.Identity.Set(ctx, identityModel{Node: types.StringValue(nodeName), Source: types.StringValue(source),
		Target: types.StringValue(target), SwitchMethod: types.StringValue(string(method))})...)
}

// connect resolves the node to an SSH host and builds the Kubernetes hooks.
func (r *Resource) connect(ctx context.Context, nodeName string, drain bool, diags *diag.Diagnostics) (*node.Host, Hooks, bool) {
	client := r.data.KubeClient(diags)
	if client == nil {
		return nil, Hooks{}, false
	}
	host, err := r.data.Host(ctx, nodeName)
	if err != nil {
		diags.AddError("Cannot reach node "+nodeName, err.Error())
		return nil, Hooks{}, false
	}
	k := &kubeHooks{client: client, node: nodeName}
	return host, k.hooks(drain), true
}

// addSpecError reports a model value the migration cannot use, on its attribute when it names one.
// what is "configuration" or "state"; fix says what the user can do.
func addSpecError(diags *diag.Diagnostics, err error, what, fix string) {
	var ae *attrError
	if errors.As(err, &ae) {
		diags.AddAttributeError(path.Root(ae.attr), fmt.Sprintf("Invalid %s in the %s", ae.attr, what), ae.err.Error()+". "+fix)
		return
	}
	diags.AddError("Invalid k3s data dir migration "+what, err.Error()+". "+fix)
}

// stateFix says how to repair a state whose values the migration cannot use.
func stateFix(nodeName string) string {
	return fmt.Sprintf("The state of this clusterstorage_k3s_data_dir_migration (node %s) holds a value this provider cannot use, "+
		"probably edited by hand or written by another version. Remove it with `terraform state rm <address>` and import it again "+
		"(`terraform import <address> <node>,<source>,<target>[,<switch_method>]`); the node itself was not changed.", nodeName)
}
