package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	"k8s.io/client-go/kubernetes"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/helm"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/importmark"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/providerdata"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/tfconv"
)

var (
	_ resource.ResourceWithConfigure      = &Resource{}
	_ resource.ResourceWithImportState    = &Resource{}
	_ resource.ResourceWithMoveState      = &Resource{}
	_ resource.ResourceWithModifyPlan     = &Resource{}
	_ resource.ResourceWithValidateConfig = &Resource{}
)

const (
	// privateDrift holds why the live release differs from state (set by Read; ModifyPlan plans the upgrade, Update does it even when chart and values match).
	privateDrift = "drift"
	// privateWriteOnly holds the value paths the last apply set from set_wo (their values are in
	// neither plan nor state): Read leaves them out of the drift check.
	privateWriteOnly = "write_only_paths"

	defaultCreateTimeout = 15 * time.Minute
	defaultUpdateTimeout = 15 * time.Minute
	defaultDeleteTimeout = 10 * time.Minute
	// cleanupMargin is added to the context deadline beyond Helm's own timeout, so that an atomic
	// install or upgrade that timed out still has time to remove or roll back what it did.
	cleanupMargin = 2 * time.Minute
	// defaultMaxHistory is how many release revisions an upgrade keeps (max_history).
	defaultMaxHistory = 10
	// defaultForceDestroy and defaultForceStrandVolumes are force_destroy's and
	// force_strand_volumes' defaults (schema and import).
	defaultForceDestroy       = false
	defaultForceStrandVolumes = false

	// releaseOwner marks the Helm releases this provider installs and upgrades (release label
	// helm.OwnerLabel): only those are ever repaired when an interrupted apply left them pending.
	releaseOwner = "terraform-provider-clusterstorage"
)

// NewResource returns the clusterstorage_storage_backend resource.
func NewResource() resource.Resource {
	return &Resource{}
}

// Resource manages one storage backend Helm release.
type Resource struct {
	data *providerdata.Data
}

// Metadata sets the type name.
func (r *Resource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_storage_backend"
}

// Configure receives the provider's shared clients.
func (r *Resource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.data = providerdata.From(req.ProviderData, &resp.Diagnostics)
}

// ValidateConfig checks that the settings block matches the type and that a client certificate
// comes with its key. A settings block not known yet is checked once it is.
func (r *Resource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	config := req.Config
	tfconv.Pending(&config.Raw, &resp.Diagnostics, "openebs", "longhorn", "set", "set_sensitive", "set_wo")
	var m model
	resp.Diagnostics.Append(config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if cert, key := m.RepositoryCertFile, m.RepositoryKeyFile; !cert.IsUnknown() && !key.IsUnknown() && cert.IsNull() != key.IsNull() {
		missing := "repository_key_file"
		if cert.IsNull() {
			missing = "repository_cert_file"
		}
		resp.Diagnostics.AddAttributeError(path.Root(missing), "Client certificate without its pair",
			"repository_cert_file and repository_key_file go together: set "+missing+" too, or neither.")
	}
	if m.Type.IsUnknown() || m.Type.IsNull() {
		return
	}
	t := m.Type.ValueString()
	if m.OpenEBS != nil && t != typeOpenEBS {
		resp.Diagnostics.AddAttributeError(path.Root("openebs"), "Settings for another type",
			"The openebs block only applies to type = \"openebs\"; this backend is "+t+".")
	}
	if m.Longhorn != nil && t != typeLonghorn {
		resp.Diagnostics.AddAttributeError(path.Root("longhorn"), "Settings for another type",
			"The longhorn block only applies to type = \"longhorn\"; this backend is "+t+".")
	}
}

// ModifyPlan fills the per-type defaults, checks the chart version and raw values against the
// typed settings, and plans an upgrade when the live release drifted from state. Settings or raw
// values not known yet (built from values computed during apply) are checked once they are.
func (r *Resource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return
	}
	known := req.Plan
	typedPending := tfconv.Pending(&known.Raw, &resp.Diagnostics, "openebs", "longhorn")
	rawPending := tfconv.Pending(&known.Raw, &resp.Diagnostics, "values", "set", "set_sensitive")
	// set_wo is in the configuration only; it is checked with the other raw values.
	config := req.Config
	rawPending = append(rawPending, tfconv.Pending(&config.Raw, &resp.Diagnostics, "set_wo")...)
	var plan model
	resp.Diagnostics.Append(known.Get(ctx, &plan)...)
	resp.Diagnostics.Append(readWriteOnly(ctx, config, &plan)...)
	if resp.Diagnostics.HasError() || plan.Type.IsUnknown() {
		return
	}
	plan.withDefaults()
	for _, a := range []struct {
		name string
		v    types.String
	}{{"chart", plan.Chart}, {"repository", plan.Repository}, {"version", plan.Version}, {"namespace", plan.Namespace}, {"release_name", plan.ReleaseName}} {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root(a.name), a.v)...)
	}
	if !plan.Namespace.IsUnknown() && !plan.ReleaseName.IsUnknown() && req.State.Raw.IsNull() {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("id"), types.StringValue(plan.Namespace.ValueString()+"/"+plan.ReleaseName.ValueString()))...)
	}

	// The chart archive of the planned version, fetched once for this plan's render check and
	// update guard.
	archive := &planArchive{}

	// With an exact version, its value keys are known now: check the version, the typed settings,
	// and the raw values against them once those are known.
	if v := plan.Version; !v.IsUnknown() && isExactVersion(v.ValueString()) && len(typedPending) == 0 {
		s := plan.spec()
		if len(rawPending) > 0 {
			s.Values, s.Sets = nil, nil
		}
		version := strings.TrimPrefix(v.ValueString(), "v")
		if _, err := s.valuesFor(version); err != nil {
			resp.Diagnostics.Append(settingsError(s, err)...)
			return
		}
		var installed types.String
		if !req.State.Raw.IsNull() {
			resp.Diagnostics.Append(req.State.GetAttribute(ctx, path.Root("chart_version"), &installed)...)
		}
		if r, verified, err := s.engine().layoutFor(version); err == nil && !verified && installed.ValueString() != version {
			resp.Diagnostics.AddAttributeWarning(path.Root("version"), "Chart version "+version+" not verified", s.engine().unverifiedText(version, r))
		}
		// The chart archive rendered with the planned values, when something is to change.
		if len(rawPending) == 0 && !req.Plan.Raw.Equal(req.State.Raw) {
			if resp.Diagnostics.Append(r.planChartCheck(ctx, s, version, archive)...); resp.Diagnostics.HasError() {
				return
			}
		}
	}

	if req.State.Raw.IsNull() {
		// A release k3s's helm-controller manages is refused now where the cluster can be read
		// (else Create checks).
		if !plan.Namespace.IsUnknown() && !plan.ReleaseName.IsUnknown() {
			if dyn, err := r.data.Kube.Dynamic(); err == nil {
				s := plan.spec()
				if charts, err := managingHelmCharts(ctx, dyn, s.Namespace, s.ReleaseName); err == nil {
					resp.Diagnostics.Append(helmControllerError(s, charts, "installing")...)
				}
			}
			// So is a release of that name that Flux or Argo CD manages.
			if hc, _, diags := r.clients(ctx); !diags.HasError() {
				if live, err := hc.Get(plan.ReleaseName.ValueString(), plan.Namespace.ValueString()); err == nil {
					resp.Diagnostics.Append(gitOpsGuard(ctx, hc, live, "installing")...)
				}
			}
		}
		return
	}
	var state model
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if v := plan.Version.ValueString(); !plan.Version.IsUnknown() && isExactVersion(v) && state.Type.Equal(plan.Type) {
		if err := plan.spec().engine().upgradeCheck(state.ChartVersion.ValueString(), strings.TrimPrefix(v, "v")); err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("version"), "Unsupported upgrade path", err.Error())
			return
		}
		// The update guard, once everything it reads is known (else the apply runs it).
		if len(typedPending) == 0 && len(rawPending) == 0 && len(resp.RequiresReplace) == 0 && !plan.ForceStrandVolumes.IsUnknown() {
			resp.Diagnostics.Append(r.planStrandGuard(ctx, plan.spec(), strings.TrimPrefix(v, "v"), archive)...)
			if resp.Diagnostics.HasError() {
				return
			}
		}
	}
	if reason := driftReason(ctx, req.Private); reason != "" {
		resp.Diagnostics.AddWarning("Storage backend changed outside Terraform",
			reason+" This apply upgrades the release back to the configuration.")
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("revision"), types.Int64Unknown())...)
		for _, name := range []string{"status", "chart_version", "app_version"} {
			resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root(name), types.StringUnknown())...)
		}
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("storage_classes"), types.ListUnknown(types.StringType))...)
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("footprint"), types.ObjectUnknown(footprintAttrTypes))...)
	}
}

// planStrandGuard runs the update guard (strand.go) at plan against the live release. When the
// cluster or the release cannot be read now (the provider's connection is not known yet, the
// release is gone), the apply checks instead, before Helm is called. The chart archive is the
// plan's (archive: fetched once for the render check and this guard).
func (r *Resource) planStrandGuard(ctx context.Context, s spec, version string, archive *planArchive) diag.Diagnostics {
	var diags diag.Diagnostics
	later := func(why string) diag.Diagnostics {
		tflog.Info(ctx, "update guard left to the apply: "+why, map[string]any{"release": s.id()})
		return diags
	}
	values, err := s.valuesFor(version)
	if err != nil {
		return later(err.Error())
	}
	hc, client, cdiags := r.clients(ctx)
	if cdiags.HasError() {
		return later("the cluster cannot be reached at plan")
	}
	live, err := hc.Get(s.ReleaseName, s.Namespace)
	if err != nil {
		return later("reading the release: " + err.Error())
	}
	if live.ChartVersion == version && sameValues(values, live.Values) {
		return diags // no upgrade: nothing is stranded
	}
	// Which engines the chart turns on by default is the archive's to say (guard_engines.go).
	src := s.Source
	src.Version = version
	ch, err := archive.chart(ctx, hc, src)
	if err != nil {
		return later("fetching the chart: " + err.Error())
	}
	gdiags, err := r.strandGuard(ctx, client, s, live, version, ch.Values, values)
	if err != nil {
		return later("listing the volumes: " + err.Error())
	}
	return gdiags
}

// Create installs the release (atomically when waiting). A release of the same name that exists
// already is an error, except one this provider installed whose install was interrupted: that one
// is removed and installed again.
func (r *Resource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan model
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	s, timeout, hc, client, diags := r.begin(ctx, req.Config, &plan, plan.Timeouts.Create, defaultCreateTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout+cleanupMargin)
	defer cancel()
	step := newStepLog(ctx, "create")

	if dyn, err := r.data.Kube.Dynamic(); err == nil {
		resp.Diagnostics.Append(helmControllerGuard(ctx, dyn, s, "installing")...)
		if resp.Diagnostics.HasError() {
			return
		}
	}
	resp.Diagnostics.Append(claimReleaseName(ctx, hc, s, timeout)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if s.Preflight {
		resp.Diagnostics.Append(r.preflight(ctx, client, s)...)
		if resp.Diagnostics.HasError() {
			return
		}
	}
	step.done("guards")
	rel, diags := prepare(ctx, hc, s)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	step.done("chart")
	resp.Diagnostics.Append(r.checkCluster(ctx, client, s, rel.Values)...)
	if resp.Diagnostics.HasError() {
		return
	}
	step.done("cluster checks")
	rel.Timeout = timeout
	rel.Description = "installed by " + releaseOwner
	tflog.Info(ctx, "installing storage backend", map[string]any{"type": s.Type, "release": s.id(), "chart_version": rel.Chart.Metadata.Version, "wait": s.Wait, "timeout": timeout.String()})
	st, err := hc.Install(ctx, *rel)
	if err != nil {
		// State says what is real: a release the failed install left behind is recorded (as
		// failed, so Terraform replaces it); none, and nothing is recorded.
		left, getErr := hc.Get(s.ReleaseName, s.Namespace)
		if getErr == nil {
			resp.Diagnostics.Append(observe(ctx, hc, &plan, left)...)
			resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
			resp.Diagnostics.Append(setIdentity(ctx, resp.Identity, plan)...)
		}
		resp.Diagnostics.AddError("Installing "+s.Type+" release "+s.id()+" failed", applyFailure(opInstall, s, timeout, err, left, getErr))
		return
	}
	step.done("helm install")
	resp.Diagnostics.Append(observe(ctx, hc, &plan, st)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	resp.Diagnostics.Append(setIdentity(ctx, resp.Identity, plan)...)
	resp.Diagnostics.Append(resp.Private.SetKey(ctx, privateDrift, nil)...)
	// What the apply wrote is the first refresh's drift cache (helm.Status.Applied).
	resp.Diagnostics.Append(saveDriftCache(ctx, resp.Private, st.Applied)...)
	resp.Diagnostics.Append(rememberWriteOnly(ctx, resp.Private, s)...)
	step.done("observe")
	resp.Diagnostics.Append(demoteOtherDefaults(ctx, client, s, st)...)
	step.done("default classes")
}

// Read compares the live release with state: a missing release is removed from state, a
// changed chart version shows in `version`, and changed values or a release that is not
// deployed are remembered for ModifyPlan to plan an upgrade.
func (r *Resource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state model
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	step := newStepLog(ctx, "read")
	imported, diags := importmark.FirstRead(ctx, req.Private, resp.Private)
	resp.Diagnostics.Append(diags...)
	hc, _, diags := r.clients(ctx)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	if state.Namespace.IsNull() || state.ReleaseName.IsNull() {
		ns, name, ok := strings.Cut(state.ID.ValueString(), "/")
		if !ok {
			resp.Diagnostics.AddAttributeError(path.Root("id"), "Invalid storage backend id in state",
				"The id must be <namespace>/<release_name> (e.g. openebs/openebs), got "+state.ID.ValueString()+
					". Remove the resource from state (`terraform state rm`) and import it again with that form.")
			return
		}
		state.Namespace, state.ReleaseName = types.StringValue(ns), types.StringValue(name)
	}
	ns, name := state.Namespace.ValueString(), state.ReleaseName.ValueString()
	if imported {
		if dyn, err := r.data.Kube.Dynamic(); err == nil {
			resp.Diagnostics.Append(helmControllerGuard(ctx, dyn, spec{Namespace: ns, ReleaseName: name}, "importing")...)
			if resp.Diagnostics.HasError() {
				return
			}
		}
	}
	st, err := hc.Get(name, ns)
	if errors.Is(err, helm.ErrNotFound) {
		if imported {
			resp.Diagnostics.AddError("Cannot import storage backend "+ns+"/"+name,
				"There is no Helm release "+name+" in namespace "+ns+" (`helm list -n "+ns+"` lists what there is). Check the id: <namespace>/<release_name>.")
			return
		}
		tflog.Info(ctx, "Helm release is gone; removing it from state", map[string]any{"release": ns + "/" + name})
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		resp.Diagnostics.AddError("Reading Helm release "+ns+"/"+name+" failed", readFailure(ns, err))
		return
	}
	if imported {
		resp.Diagnostics.Append(gitOpsGuard(ctx, hc, st, "importing")...)
		if resp.Diagnostics.HasError() {
			return
		}
		if err := state.adopt(st); err != nil {
			resp.Diagnostics.AddError("Cannot import storage backend "+ns+"/"+name, err.Error())
			return
		}
		resp.Diagnostics.Append(markAdopted(ctx, resp.Private)...)
	}
	step.done("release")
	resp.Diagnostics.Append(observe(ctx, hc, &state, st)...)
	step.done("observe")

	// Drift: chart version, values, status, and the release's objects on the cluster.
	var drift []string
	if !satisfies(st.ChartVersion, strings.TrimPrefix(state.Version.ValueString(), "v")) {
		drift = append(drift, fmt.Sprintf("chart version %s is installed, not %s.", st.ChartVersion, state.Version.ValueString()))
		state.Version = types.StringValue(st.ChartVersion)
	}
	if st.Status != "deployed" {
		drift = append(drift, fmt.Sprintf("the release is %s at revision %d (%s).", st.Status, st.Revision, st.Description))
	}
	if want, live, err := valuesToCompare(ctx, req.Private, state, st); err == nil && !imported && !sameValues(want, live) {
		drift = append(drift, fmt.Sprintf("the values of revision %d differ from the configuration (keys: %s).",
			st.Revision, strings.ReplaceAll(valuesDiff(want, live), "\n", " ")))
	}
	if st.Status == "deployed" && !imported {
		changed, diags := objectDrift(ctx, hc, st, req.Private, resp.Private)
		drift = append(drift, changed...)
		resp.Diagnostics.Append(diags...)
	}
	step.done("drift")
	var msg []byte
	if len(drift) > 0 {
		text := "Helm release " + ns + "/" + name + ": " + strings.Join(drift, " ")
		tflog.Info(ctx, text)
		msg, _ = json.Marshal(text)
	}
	resp.Diagnostics.Append(resp.Private.SetKey(ctx, privateDrift, msg)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
	resp.Diagnostics.Append(setIdentity(ctx, resp.Identity, state)...)
}

// driftReason is the drift Read found and recorded in private state (carried by the plan to the
// apply), "" for none or when it cannot be read.
func driftReason(ctx context.Context, private importmark.Getter) string {
	raw, diags := private.GetKey(ctx, privateDrift)
	var reason string
	if diags.HasError() || len(raw) == 0 || json.Unmarshal(raw, &reason) != nil {
		return ""
	}
	return reason
}

// objectDrift says which of the release's objects were changed or deleted on the cluster since
// Helm applied them (kubectl edit, kubectl delete), in words for the drift message; nothing when
// none was. Objects that cannot be checked (no permission to dry-run patch them, an admission
// webhook that refuses dry runs) are a warning that names them and why: drift detection is off
// for them, not for the rest, and the refresh goes on. Objects unchanged since the last refresh
// are not dry-run again (driftcache.go).
func objectDrift(ctx context.Context, hc *helm.Client, st *helm.Status, from importmark.Getter, to importmark.Setter) ([]string, diag.Diagnostics) {
	var diags diag.Diagnostics
	changed, cache, err := hc.ObjectDriftCached(ctx, st, loadDriftCache(ctx, from))
	diags.Append(saveDriftCache(ctx, to, cache)...)
	if err != nil {
		tflog.Warn(ctx, "Checking the release's objects for changes made on the cluster failed", map[string]any{"error": err.Error()})
		diags.AddWarning("Drift of Helm release "+st.Namespace+"/"+st.Name+" not checked",
			"Whether the release's objects were changed on the cluster since Helm applied them is checked with a server-side dry run "+
				"of applying each again; "+err.Error()+". Changes made to those objects outside Terraform are not detected until this is fixed.")
	}
	if len(changed) == 0 {
		return nil, diags
	}
	return []string{fmt.Sprintf("objects of revision %d were changed on the cluster since Helm applied them: %s.",
		st.Revision, strings.Join(changed, "; "))}, diags
}

// valuesToCompare returns the values state asks for and the live release's, each with the value paths
// set_wo set masked (state holds no values for them).
func valuesToCompare(ctx context.Context, private importmark.Getter, state model, st *helm.Status) (want, live map[string]any, err error) {
	want, err = state.spec().valuesFor(st.ChartVersion)
	if err != nil {
		return nil, nil, err
	}
	if e, ok := engines[state.Type.ValueString()]; ok {
		base := state // what the typed settings render at their defaults
		base.Longhorn, base.OpenEBS = nil, nil
		rng, rerr := e.rangeFor(st.ChartVersion)
		if defaults, derr := base.spec().valuesFor(st.ChartVersion); rerr == nil && derr == nil {
			want = withoutUnsetDefaults(want, st.Values, defaults, rng.Keys)
		}
	}
	var names []string
	if raw, diags := private.GetKey(ctx, privateWriteOnly); !diags.HasError() && len(raw) > 0 {
		if err := json.Unmarshal(raw, &names); err != nil {
			return nil, nil, fmt.Errorf("the write-only value paths in private state: %w", err)
		}
	}
	if len(names) == 0 {
		return want, st.Values, nil
	}
	if want, err = helm.MaskPaths(want, names); err != nil {
		return nil, nil, err
	}
	if live, err = helm.MaskPaths(st.Values, names); err != nil {
		return nil, nil, err
	}
	return want, live, nil
}

// Update upgrades the release (rolled back when waiting and it fails).
func (r *Resource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state model
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	s, timeout, hc, client, diags := r.begin(ctx, req.Config, &plan, plan.Timeouts.Update, defaultUpdateTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout+cleanupMargin)
	defer cancel()

	resp.Diagnostics.Append(recoverPending(ctx, hc, s, timeout)...)
	if resp.Diagnostics.HasError() {
		return
	}
	rel, diags := prepare(ctx, hc, s)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	rel.Timeout = timeout
	live, err := hc.Get(s.ReleaseName, s.Namespace)
	if err == nil {
		if pathErr := s.engine().upgradeCheck(live.ChartVersion, rel.Chart.Metadata.Version); pathErr != nil {
			resp.Diagnostics.AddAttributeError(path.Root("version"), "Unsupported upgrade path", pathErr.Error())
			return
		}
	}
	op := opUpgrade
	var st *helm.Status
	switch {
	case errors.Is(err, helm.ErrNotFound):
		tflog.Info(ctx, "Helm release is gone; installing it again", map[string]any{"release": s.id()})
		op = opInstall
		rel.Description = "installed by " + releaseOwner
		st, err = hc.Install(ctx, *rel)
	case err != nil:
		resp.Diagnostics.AddError("Reading Helm release "+s.id()+" failed", readFailure(s.Namespace, err))
		return
	case live.Status == "deployed" && live.ChartVersion == rel.Chart.Metadata.Version && sameValues(rel.Values, live.Values) &&
		driftReason(ctx, req.Private) == "":
		tflog.Debug(ctx, "release already matches the configuration; no upgrade", map[string]any{"release": s.id()})
		st = live
	default:
		// The update guard (strand.go) first: nothing else is worth checking if it refuses.
		gdiags, gerr := r.strandGuard(ctx, client, s, live, rel.Chart.Metadata.Version, rel.Chart.Values, rel.Values)
		resp.Diagnostics.Append(gdiags...)
		if gerr != nil {
			resp.Diagnostics.AddError("Listing the volumes of "+s.Type+" release "+s.id()+" failed",
				"The update turns off an engine or moves a data path, and goes ahead only when no volume would be stranded (or with force_strand_volumes), "+
					"which could not be checked: "+gerr.Error()+". Nothing was upgraded. The provider's credentials need list access to PersistentVolumes, "+
					"PersistentVolumeClaims and StorageClasses (and volumes.longhorn.io for Longhorn).")
		}
		if resp.Diagnostics.HasError() {
			return
		}
		if s.Preflight {
			resp.Diagnostics.Append(r.preflight(ctx, client, s)...)
			if resp.Diagnostics.HasError() {
				return
			}
		}
		resp.Diagnostics.Append(r.checkCluster(ctx, client, s, rel.Values)...)
		if resp.Diagnostics.HasError() {
			return
		}
		if s.Type == typeLonghorn {
			resp.Diagnostics.Append(prepareLonghornClassChange(ctx, client, live, rel.Values)...)
			if resp.Diagnostics.HasError() {
				return
			}
		}
		rel.Description = "upgraded by " + releaseOwner
		// The first upgrade after an import takes over the helm CLI's fields (adopt.go).
		rel.Adopted = adoptionPending(ctx, req.Private)
		tflog.Info(ctx, "upgrading storage backend", map[string]any{"type": s.Type, "release": s.id(), "chart_version": rel.Chart.Metadata.Version, "wait": s.Wait, "timeout": timeout.String(), "adopted": rel.Adopted})
		st, err = hc.Upgrade(ctx, *rel)
		if err == nil && rel.Adopted {
			resp.Diagnostics.Append(adoptionDone(ctx, resp.Private)...)
		}
	}
	if err != nil {
		// State says what is real: the prior configuration with the release as it is now.
		now, getErr := hc.Get(s.ReleaseName, s.Namespace)
		if getErr == nil {
			resp.Diagnostics.Append(observe(ctx, hc, &state, now)...)
		}
		resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
		resp.Diagnostics.Append(setIdentity(ctx, resp.Identity, state)...)
		verb := "Upgrading "
		if op == opInstall {
			verb = "Installing "
		}
		resp.Diagnostics.AddError(verb+s.Type+" release "+s.id()+" failed", applyFailure(op, s, timeout, err, now, getErr))
		return
	}
	resp.Diagnostics.Append(observe(ctx, hc, &plan, st)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	resp.Diagnostics.Append(setIdentity(ctx, resp.Identity, plan)...)
	resp.Diagnostics.Append(resp.Private.SetKey(ctx, privateDrift, nil)...)
	// What the apply wrote is the first refresh's drift cache (helm.Status.Applied).
	resp.Diagnostics.Append(saveDriftCache(ctx, resp.Private, st.Applied)...)
	resp.Diagnostics.Append(rememberWriteOnly(ctx, resp.Private, s)...)
	resp.Diagnostics.Append(demoteOtherDefaults(ctx, client, s, st)...)
}

// Delete uninstalls the release. It refuses while any volume of the backend's drivers exists
// (guard.go) unless force_destroy, and while someone else's Helm operation on the release is
// pending; only then, for Longhorn, it sets deleting-confirmation-flag so the chart's pre-delete
// hook lets the uninstall proceed.
func (r *Resource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state model
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	s := state.spec()
	timeout, diags := state.Timeouts.Delete(ctx, defaultDeleteTimeout)
	resp.Diagnostics.Append(diags...)
	hc, client, diags := r.clients(ctx)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout+cleanupMargin)
	defer cancel()

	st, err := hc.Get(s.ReleaseName, s.Namespace)
	if errors.Is(err, helm.ErrNotFound) {
		return
	}
	if err != nil {
		resp.Diagnostics.AddError("Reading Helm release "+s.id()+" failed", readFailure(s.Namespace, err))
		return
	}
	resp.Diagnostics.Append(r.guard(ctx, client, s, st)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if st.Pending() {
		// Never uninstall under someone else's operation; repair an abandoned one of ours first.
		resp.Diagnostics.Append(recoverPending(ctx, hc, s, timeout)...)
		if resp.Diagnostics.HasError() {
			return
		}
		if _, err := hc.Get(s.ReleaseName, s.Namespace); errors.Is(err, helm.ErrNotFound) {
			return
		}
	}
	if s.Type == typeLonghorn {
		resp.Diagnostics.Append(r.confirmLonghornDeletion(ctx, client, s.Namespace)...)
		if resp.Diagnostics.HasError() {
			return
		}
	}
	tflog.Info(ctx, "uninstalling storage backend", map[string]any{"type": s.Type, "release": s.id(), "timeout": timeout.String()})
	if err := hc.Uninstall(ctx, s.ReleaseName, s.Namespace, helm.UninstallOptions{Wait: true, Timeout: timeout}); err != nil {
		resp.Diagnostics.AddError("Uninstalling "+s.Type+" release "+s.id()+" failed", applyFailure(opUninstall, s, timeout, err, nil, nil))
	}
}

// ImportState imports a release by `<namespace>/<release_name>` or by its identity.
func (r *Resource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	ns, name, ok := importTarget(ctx, req, &resp.Diagnostics)
	if !ok {
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), ns+"/"+name)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("namespace"), ns)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("release_name"), name)...)
	resp.Diagnostics.Append(setIdentity(ctx, resp.Identity, model{Namespace: types.StringValue(ns), ReleaseName: types.StringValue(name)})...)
	resp.Diagnostics.Append(importmark.Mark(ctx, resp.Private)...)
}

// MoveState takes over a hashicorp/helm `helm_release` with a `moved` block: the release it
// names is imported (by `<namespace>/<name>`) and adopted as an import block adopts it; nothing is
// uninstalled or upgraded by the move.
func (r *Resource) MoveState(context.Context) []resource.StateMover {
	return importmark.StateMovers(r, importmark.Source{Provider: "hashicorp/helm", Type: "helm_release", ID: func(state map[string]any) (string, error) {
		name, err := importmark.StringAt(state, "name")
		if err != nil {
			return "", err
		}
		ns, err := importmark.StringAt(state, "namespace")
		if err != nil {
			ns = "default" // helm_release's own default
		}
		return ns + "/" + name, nil
	}})
}

// begin is how Create and Update start: the plan with its defaults filled in and the write-only
// attributes read from config, as a spec (the plan keeps them null, as state must); the
// operation's timeout (timeouts is the plan's Timeouts.Create or Timeouts.Update, def its
// default); and the clients.
func (r *Resource) begin(ctx context.Context, config tfsdk.Config, plan *model, timeouts func(context.Context, time.Duration) (time.Duration, diag.Diagnostics), def time.Duration) (spec, time.Duration, *helm.Client, kubernetes.Interface, diag.Diagnostics) {
	plan.withDefaults()
	diags := readWriteOnly(ctx, config, plan)
	s := plan.spec()
	plan.SetWO, plan.RepositoryPasswordWO = nil, types.StringNull() // never into state
	timeout, more := timeouts(ctx, def)
	diags.Append(more...)
	hc, client, more := r.clients(ctx)
	diags.Append(more...)
	return s, timeout, hc, client, diags
}

// readWriteOnly fills the write-only attributes, null in plan and state, from the configuration.
func readWriteOnly(ctx context.Context, config tfsdk.Config, m *model) diag.Diagnostics {
	var diags diag.Diagnostics
	diags.Append(config.GetAttribute(ctx, path.Root("set_wo"), &m.SetWO)...)
	diags.Append(config.GetAttribute(ctx, path.Root("repository_password_wo"), &m.RepositoryPasswordWO)...)
	return diags
}

// rememberWriteOnly records the value paths an apply set from set_wo (privateWriteOnly).
func rememberWriteOnly(ctx context.Context, private importmark.Setter, s spec) diag.Diagnostics {
	var names []string
	for _, set := range s.Sets {
		if set.Attribute == "set_wo" {
			names = append(names, set.Name)
		}
	}
	var raw []byte
	if len(names) > 0 {
		raw, _ = json.Marshal(names)
	}
	return private.SetKey(ctx, privateWriteOnly, raw)
}

// clients returns a Helm client on the provider's cluster that logs to tflog and marks the
// releases it installs as this provider's, and the typed Kubernetes client.
func (r *Resource) clients(ctx context.Context) (*helm.Client, kubernetes.Interface, diag.Diagnostics) {
	var diags diag.Diagnostics
	client := r.data.KubeClient(&diags)
	if diags.HasError() {
		return nil, nil, diags
	}
	rc, err := r.data.Kube.REST()
	if err != nil {
		diags.AddError("Cannot reach the Kubernetes cluster for Helm",
			"The provider's Kubernetes configuration gave no usable connection: "+err.Error()+
				". Check the provider's `kubernetes` block (or the KUBECONFIG / KUBE_* environment variables it falls back to).")
		return nil, nil, diags
	}
	hc, err := helm.New(rc, helm.Options{Owner: releaseOwner, Log: func(format string, args ...any) {
		tflog.Debug(ctx, fmt.Sprintf(format, args...))
	}})
	if err != nil {
		diags.AddError("Creating the Helm client failed",
			"The Helm SDK could not be set up on the provider's Kubernetes connection: "+err.Error()+
				". Check the provider's `kubernetes` block; this is a bug in the provider if the connection works for other resources.")
		return nil, nil, diags
	}
	return hc, client, diags
}

// prepare fetches the chart and computes the values for it.
func prepare(ctx context.Context, hc *helm.Client, s spec) (*helm.Release, diag.Diagnostics) {
	var diags diag.Diagnostics
	ch, err := hc.LocateChart(ctx, s.Source)
	if err != nil {
		diags.AddAttributeError(path.Root("repository"), "Fetching chart "+s.Source.String()+" failed",
			err.Error()+". Check repository, chart and version (and the repository_* credentials and certificates, if the repository needs them).")
		return nil, diags
	}
	if ch.Metadata.Name != s.engine().Chart {
		diags.AddAttributeError(path.Root("chart"), "Wrong chart for type "+s.Type,
			fmt.Sprintf("The chart %s is named %q, but type %q installs the %q chart. Point chart (or repository) at the %s chart.",
				s.Source, ch.Metadata.Name, s.Type, s.engine().Chart, s.engine().Chart))
		return nil, diags
	}
	values, err := s.valuesFor(ch.Metadata.Version)
	if err != nil {
		diags.Append(settingsError(s, err)...)
		return nil, diags
	}
	// The archive in hand is the check: its value layout, and what it renders with the values.
	diags.Append(archiveDiags(ctx, ch, s, values)...)
	if diags.HasError() {
		return nil, diags
	}
	return &helm.Release{
		Name: s.ReleaseName, Namespace: s.Namespace, CreateNamespace: s.CreateNamespace,
		Chart: ch, Values: values, Wait: s.Wait, MaxHistory: s.MaxHistory,
	}, diags
}

// observe reads the release, its StorageClasses and its footprint into m.
func observe(ctx context.Context, hc *helm.Client, m *model, st *helm.Status) diag.Diagnostics {
	var diags diag.Diagnostics
	var classes []string
	if objs, err := st.Objects(); err == nil {
		classes = helm.StorageClasses(objs)
	} else {
		diags.AddWarning("Reading the manifest of Helm release "+st.Namespace+"/"+st.Name+" failed",
			"storage_classes stays empty until it can be read: "+err.Error()+". See `helm get manifest "+st.Name+" -n "+st.Namespace+"`.")
	}
	var fp *kube.Footprint
	if st.Status == "deployed" {
		var err error
		fp, err = hc.ReleaseFootprint(ctx, st)
		if err != nil {
			tflog.Warn(ctx, "measuring the footprint failed", map[string]any{"error": err.Error()})
		}
	}
	m.observed(st, fp, classes)
	return diags
}
