package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/helm"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/providerdata"
)

var (
	_ resource.ResourceWithConfigure      = &Resource{}
	_ resource.ResourceWithImportState    = &Resource{}
	_ resource.ResourceWithModifyPlan     = &Resource{}
	_ resource.ResourceWithValidateConfig = &Resource{}
)

const (
	privateImported = "imported"
	// privateDrift holds why the live release differs from state (set by Read, used by ModifyPlan).
	privateDrift = "drift"

	defaultCreateTimeout = 15 * time.Minute
	defaultUpdateTimeout = 15 * time.Minute
	defaultDeleteTimeout = 10 * time.Minute
	// cleanupMargin is added to the context deadline beyond Helm's own timeout, so that an atomic
	// install or upgrade that timed out still has time to remove or roll back what it did.
	cleanupMargin = 2 * time.Minute
)

var longhornSettingGVR = schema.GroupVersionResource{Group: "longhorn.io", Version: "v1beta2", Resource: "settings"}

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

// ValidateConfig checks that the settings block matches the type.
func (r *Resource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var m model
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() || m.Type.IsUnknown() || m.Type.IsNull() {
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
// typed settings, and plans an upgrade when the live release drifted from state.
func (r *Resource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return
	}
	var plan model
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
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

	// With an exact version, its value keys are known now: check the version and the raw values.
	if v := plan.Version; !v.IsUnknown() && isExactVersion(v.ValueString()) && !plan.Values.IsUnknown() && setKnown(plan.Set) {
		s := plan.spec()
		if _, err := s.valuesFor(strings.TrimPrefix(v.ValueString(), "v")); err != nil {
			p := path.Root("version")
			var ce *contradictionError
			var se *settingError
			switch {
			case errors.As(err, &ce):
				p = path.Root("values")
				if plan.Values.IsNull() {
					p = path.Root("set")
				}
			case errors.As(err, &se):
				p = path.Root(se.Block).AtName(se.Setting)
			}
			resp.Diagnostics.AddAttributeError(p, "Invalid storage backend settings", err.Error())
			return
		}
	}

	if req.State.Raw.IsNull() {
		return
	}
	var state model
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if v := plan.Version.ValueString(); !plan.Version.IsUnknown() && isExactVersion(v) && state.Type.Equal(plan.Type) {
		if err := plan.spec().engine().upgradeCheck(state.ChartVersion.ValueString(), strings.TrimPrefix(v, "v")); err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("version"), "Unsupported upgrade path", err.Error())
			return
		}
	}
	drift, diags := req.Private.GetKey(ctx, privateDrift)
	resp.Diagnostics.Append(diags...)
	var reason string
	if len(drift) > 0 && json.Unmarshal(drift, &reason) == nil && reason != "" {
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

// waitFailed reports whether a Helm error says that waiting for the release's workloads ran out
// of time.
func waitFailed(err error) bool {
	msg := err.Error()
	return errors.Is(err, context.DeadlineExceeded) || strings.Contains(msg, "context deadline exceeded") ||
		strings.Contains(msg, "timed out waiting")
}

func setKnown(sets []setModel) bool {
	for _, s := range sets {
		if s.Name.IsUnknown() || s.Value.IsUnknown() || s.Type.IsUnknown() {
			return false
		}
	}
	return true
}

// helmClient returns a Helm client on the provider's cluster that logs to tflog.
func (r *Resource) helmClient(ctx context.Context, diags *diag.Diagnostics) (*helm.Client, kubernetes.Interface) {
	client := r.data.KubeClient(diags)
	if diags.HasError() {
		return nil, nil
	}
	rc, err := r.data.Kube.REST()
	if err != nil {
		diags.AddError("Cannot reach the Kubernetes cluster", err.Error())
		return nil, nil
	}
	hc, err := helm.New(rc, helm.Options{Log: func(format string, args ...any) {
		tflog.Debug(ctx, fmt.Sprintf(format, args...))
	}})
	if err != nil {
		diags.AddError("Setting up Helm failed", err.Error())
		return nil, nil
	}
	return hc, client
}

// recoverPending repairs a release an interrupted apply left pending, with a warning saying what
// was done.
func recoverPending(ctx context.Context, hc *helm.Client, s spec, timeout time.Duration, diags *diag.Diagnostics) bool {
	msg, err := hc.Recover(ctx, s.ReleaseName, s.Namespace, timeout)
	if err != nil {
		diags.AddError("Recovering Helm release "+s.id()+" failed",
			fmt.Sprintf("The release is stuck in a pending state from an interrupted apply and could not be repaired: %v. "+
				"Inspect it with `helm history %s -n %s`.", err, s.ReleaseName, s.Namespace))
		return false
	}
	if msg != "" {
		tflog.Warn(ctx, msg)
		diags.AddWarning("Recovered an interrupted Helm release", msg)
	}
	return true
}

// prepare fetches the chart and computes the values for it.
func prepare(ctx context.Context, hc *helm.Client, s spec, diags *diag.Diagnostics) (*helm.Release, bool) {
	ch, err := hc.LocateChart(ctx, s.Source)
	if err != nil {
		diags.AddAttributeError(path.Root("repository"), "Fetching chart "+s.Source.String()+" failed", err.Error())
		return nil, false
	}
	if ch.Metadata.Name != s.engine().Chart {
		diags.AddAttributeError(path.Root("chart"), "Wrong chart",
			fmt.Sprintf("The chart %s is named %q, but type %q installs the %q chart.", s.Source, ch.Metadata.Name, s.Type, s.engine().Chart))
		return nil, false
	}
	values, err := s.valuesFor(ch.Metadata.Version)
	if err != nil {
		p := path.Root("version")
		var ce *contradictionError
		if errors.As(err, &ce) {
			p = path.Root("values")
		}
		diags.AddAttributeError(p, "Invalid storage backend settings", err.Error())
		return nil, false
	}
	return &helm.Release{
		Name: s.ReleaseName, Namespace: s.Namespace, CreateNamespace: s.CreateNamespace,
		Chart: ch, Values: values, Wait: s.Wait,
	}, true
}

// observe reads the release, its StorageClasses and its footprint into m.
func observe(ctx context.Context, hc *helm.Client, m *model, st *helm.Status, diags *diag.Diagnostics) {
	var classes []string
	if objs, err := st.Objects(); err == nil {
		classes = helm.StorageClasses(objs)
	} else {
		diags.AddWarning("Reading the release manifest failed", err.Error())
	}
	var fp *helm.Footprint
	if st.Status == "deployed" {
		var err error
		fp, err = hc.ReleaseFootprint(ctx, st)
		if err != nil {
			tflog.Warn(ctx, "measuring the footprint failed", map[string]any{"error": err.Error()})
		}
	}
	m.observed(st, fp, classes)
}

// Create installs the release (atomically when waiting).
func (r *Resource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan model
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	plan.withDefaults()
	s := plan.spec()
	timeout, diags := plan.Timeouts.Create(ctx, defaultCreateTimeout)
	resp.Diagnostics.Append(diags...)
	hc, client := r.helmClient(ctx, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout+cleanupMargin)
	defer cancel()

	if s.Preflight {
		resp.Diagnostics.Append(r.preflight(ctx, client, s)...)
		if resp.Diagnostics.HasError() {
			return
		}
	}
	if !recoverPending(ctx, hc, s, timeout, &resp.Diagnostics) {
		return
	}
	if st, err := hc.Get(s.ReleaseName, s.Namespace); err == nil {
		resp.Diagnostics.AddError("Helm release "+s.id()+" already exists",
			fmt.Sprintf("A release with this name exists in namespace %s (revision %d, %s, chart %s %s). Import it with "+
				"`terraform import <address> %s`, or choose another release_name or namespace.",
				s.Namespace, st.Revision, st.Status, st.ChartName, st.ChartVersion, s.id()))
		return
	} else if !errors.Is(err, helm.ErrNotFound) {
		resp.Diagnostics.AddError("Reading Helm release "+s.id()+" failed", err.Error())
		return
	}
	rel, ok := prepare(ctx, hc, s, &resp.Diagnostics)
	if !ok {
		return
	}
	resp.Diagnostics.Append(r.checkCluster(ctx, client, s, rel.Values)...)
	if resp.Diagnostics.HasError() {
		return
	}
	rel.Timeout = timeout
	rel.Description = "installed by terraform-provider-clusterstorage"
	tflog.Info(ctx, "installing storage backend", map[string]any{"type": s.Type, "release": s.id(), "chart_version": rel.Chart.Metadata.Version, "wait": s.Wait, "timeout": timeout.String()})
	st, err := hc.Install(ctx, *rel)
	if err != nil {
		detail := err.Error()
		if s.Wait && waitFailed(err) {
			detail += fmt.Sprintf("\n\nThe install waited up to %s for every workload of the release to become ready. "+
				"Look at the pods in namespace %s (`kubectl -n %s get pods`, events) or raise timeouts.create.", timeout, s.Namespace, s.Namespace)
		}
		// State says what is real: a release the failed install left behind is recorded (as
		// failed, so Terraform replaces it); none, and nothing is recorded.
		left, getErr := hc.Get(s.ReleaseName, s.Namespace)
		switch {
		case getErr == nil:
			observe(ctx, hc, &plan, left, &resp.Diagnostics)
			resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
			detail += fmt.Sprintf("\n\nThe release was left %s at revision %d; the next apply replaces it.", left.Status, left.Revision)
		case errors.Is(getErr, helm.ErrNotFound):
			if s.Wait {
				detail += "\n\nThe release was removed again (atomic install)."
			}
		default:
			detail += "\n\nWhether the release was removed again could not be checked: " + getErr.Error()
		}
		resp.Diagnostics.AddError("Installing "+s.Type+" failed", detail)
		return
	}
	observe(ctx, hc, &plan, st, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	resp.Diagnostics.Append(resp.Private.SetKey(ctx, privateDrift, nil)...)
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
	imported, diags := req.Private.GetKey(ctx, privateImported)
	resp.Diagnostics.Append(diags...)
	hc, _ := r.helmClient(ctx, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	if state.Namespace.IsNull() || state.ReleaseName.IsNull() {
		ns, name, ok := strings.Cut(state.ID.ValueString(), "/")
		if !ok {
			resp.Diagnostics.AddError("Invalid id", "The id must be <namespace>/<release_name>, got "+state.ID.ValueString()+".")
			return
		}
		state.Namespace, state.ReleaseName = types.StringValue(ns), types.StringValue(name)
	}
	ns, name := state.Namespace.ValueString(), state.ReleaseName.ValueString()
	st, err := hc.Get(name, ns)
	if errors.Is(err, helm.ErrNotFound) {
		if imported != nil {
			resp.Diagnostics.AddError("Cannot import "+ns+"/"+name, "There is no Helm release "+name+" in namespace "+ns+".")
			return
		}
		tflog.Info(ctx, "Helm release is gone; removing it from state", map[string]any{"release": ns + "/" + name})
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		resp.Diagnostics.AddError("Reading Helm release "+ns+"/"+name+" failed", err.Error())
		return
	}
	if imported != nil {
		if err := state.adopt(st); err != nil {
			resp.Diagnostics.AddError("Cannot import "+ns+"/"+name, err.Error())
			return
		}
	}
	observe(ctx, hc, &state, st, &resp.Diagnostics)

	// Drift: chart version, values, status.
	var drift []string
	if !satisfies(st.ChartVersion, strings.TrimPrefix(state.Version.ValueString(), "v")) {
		drift = append(drift, fmt.Sprintf("chart version %s is installed, not %s.", st.ChartVersion, state.Version.ValueString()))
		state.Version = types.StringValue(st.ChartVersion)
	}
	if st.Status != "deployed" {
		drift = append(drift, fmt.Sprintf("the release is %s at revision %d (%s).", st.Status, st.Revision, st.Description))
	}
	if want, err := state.spec().valuesFor(st.ChartVersion); err == nil && imported == nil && !sameValues(want, st.Values) {
		drift = append(drift, fmt.Sprintf("the values of revision %d differ from the configuration (keys: %s).",
			st.Revision, strings.ReplaceAll(valuesDiff(want, st.Values), "\n", " ")))
	}
	var msg []byte
	if len(drift) > 0 {
		text := "Helm release " + ns + "/" + name + ": " + strings.Join(drift, " ")
		tflog.Info(ctx, text)
		msg, _ = json.Marshal(text)
	}
	resp.Diagnostics.Append(resp.Private.SetKey(ctx, privateDrift, msg)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
	if imported != nil {
		resp.Diagnostics.Append(resp.Private.SetKey(ctx, privateImported, nil)...)
	}
}

// Update upgrades the release (rolled back when waiting and it fails).
func (r *Resource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state model
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	plan.withDefaults()
	s := plan.spec()
	timeout, diags := plan.Timeouts.Update(ctx, defaultUpdateTimeout)
	resp.Diagnostics.Append(diags...)
	hc, client := r.helmClient(ctx, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout+cleanupMargin)
	defer cancel()

	if !recoverPending(ctx, hc, s, timeout, &resp.Diagnostics) {
		return
	}
	rel, ok := prepare(ctx, hc, s, &resp.Diagnostics)
	if !ok {
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
	var st *helm.Status
	switch {
	case errors.Is(err, helm.ErrNotFound):
		tflog.Info(ctx, "Helm release is gone; installing it again", map[string]any{"release": s.id()})
		rel.Description = "installed by terraform-provider-clusterstorage"
		st, err = hc.Install(ctx, *rel)
	case err != nil:
		resp.Diagnostics.AddError("Reading Helm release "+s.id()+" failed", err.Error())
		return
	case live.Status == "deployed" && live.ChartVersion == rel.Chart.Metadata.Version && sameValues(rel.Values, live.Values):
		tflog.Debug(ctx, "release already matches the configuration; no upgrade", map[string]any{"release": s.id()})
		st = live
	default:
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
		rel.Description = "upgraded by terraform-provider-clusterstorage"
		tflog.Info(ctx, "upgrading storage backend", map[string]any{"type": s.Type, "release": s.id(), "chart_version": rel.Chart.Metadata.Version, "wait": s.Wait, "timeout": timeout.String()})
		st, err = hc.Upgrade(ctx, *rel)
	}
	if err != nil {
		detail := err.Error()
		// State says what is real: the prior configuration with the release as it is now.
		if now, getErr := hc.Get(s.ReleaseName, s.Namespace); getErr == nil {
			observe(ctx, hc, &state, now, &resp.Diagnostics)
			if s.Wait && waitFailed(err) {
				detail += fmt.Sprintf("\n\nThe upgrade waited up to %s for every workload to become ready.", timeout)
			}
			detail += fmt.Sprintf("\n\nThe release is now revision %d (%s, chart %s)", now.Revision, now.Status, now.ChartVersion)
			if s.Wait {
				detail += ": a failed upgrade is rolled back"
			}
			detail += "."
		}
		resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
		resp.Diagnostics.AddError("Upgrading "+s.Type+" failed", detail)
		return
	}
	observe(ctx, hc, &plan, st, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	resp.Diagnostics.Append(resp.Private.SetKey(ctx, privateDrift, nil)...)
}

// prepareLonghornClassChange deletes the `longhorn` StorageClass before an upgrade that changes
// its parameters, when Helm itself manages the class: a StorageClass's parameters are immutable,
// so Helm could not patch it. (Real Longhorn renders the class only into a ConfigMap and its
// manager re-creates the class; there this does nothing.)
func prepareLonghornClassChange(ctx context.Context, client kubernetes.Interface, live *helm.Status, values map[string]any) diag.Diagnostics {
	var diags diag.Diagnostics
	objs, err := live.Objects()
	if err != nil {
		return diags
	}
	direct := false
	for _, o := range objs {
		if o.Kind == "StorageClass" && o.Name == longhornClassName && o.EmbeddedIn == "" {
			direct = true
		}
	}
	if !direct {
		return diags
	}
	sc, err := client.StorageV1().StorageClasses().Get(ctx, longhornClassName, metav1.GetOptions{})
	if err != nil {
		return diags
	}
	wantReplicas := fmt.Sprint(lookupInt(values, keyLonghornClassReplicas, defaultLonghornReplicas))
	wantLocality := lookupString(values, keyLonghornClassLocality, defaultLonghornLocality)
	if sc.Parameters["numberOfReplicas"] == wantReplicas && sc.Parameters["dataLocality"] == wantLocality {
		return diags
	}
	tflog.Info(ctx, "deleting StorageClass longhorn before the upgrade: its parameters change and are immutable",
		map[string]any{"numberOfReplicas": wantReplicas, "dataLocality": wantLocality})
	if err := client.StorageV1().StorageClasses().Delete(ctx, longhornClassName, metav1.DeleteOptions{}); err != nil && !kube.IsNotFound(err) {
		diags.AddError("Deleting StorageClass longhorn failed", "Its parameters change with this upgrade and cannot be patched: "+err.Error())
	}
	return diags
}

// Delete uninstalls the release, refusing while claims of its StorageClasses exist (unless
// force_destroy). For Longhorn it first sets deleting-confirmation-flag so the chart's
// pre-delete hook lets the uninstall proceed.
func (r *Resource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state model
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	s := state.spec()
	timeout, diags := state.Timeouts.Delete(ctx, defaultDeleteTimeout)
	resp.Diagnostics.Append(diags...)
	hc, client := r.helmClient(ctx, &resp.Diagnostics)
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
		resp.Diagnostics.AddError("Reading Helm release "+s.id()+" failed", err.Error())
		return
	}
	objs, err := st.Objects()
	if err != nil {
		resp.Diagnostics.AddError("Reading the manifest of "+s.id()+" failed", err.Error())
		return
	}
	classes := helm.StorageClasses(objs)
	claims, err := claimsOf(ctx, client, classes)
	if err != nil {
		resp.Diagnostics.AddError("Listing PersistentVolumeClaims failed", err.Error())
		return
	}
	if len(claims) > 0 {
		if !s.ForceDestroy {
			resp.Diagnostics.AddError("Storage backend "+s.id()+" still has volumes",
				fmt.Sprintf("These PersistentVolumeClaims use its StorageClasses (%s):\n  %s\nDelete them first, or set force_destroy = true "+
					"to uninstall anyway (their volumes then lose their driver).", strings.Join(classes, ", "), strings.Join(claims, "\n  ")))
			return
		}
		tflog.Warn(ctx, "uninstalling although claims of the backend's classes exist (force_destroy)", map[string]any{"claims": claims})
	}

	if s.Type == typeLonghorn {
		if !r.confirmLonghornDeletion(ctx, hc, s, &resp.Diagnostics) {
			return
		}
	}
	tflog.Info(ctx, "uninstalling storage backend", map[string]any{"type": s.Type, "release": s.id(), "timeout": timeout.String()})
	if err := hc.Uninstall(ctx, s.ReleaseName, s.Namespace, helm.UninstallOptions{Wait: true, Timeout: timeout}); err != nil {
		detail := err.Error()
		if s.Type == typeLonghorn {
			detail += "\n\nLonghorn's pre-delete hook (Job longhorn-uninstall) refuses while the deleting-confirmation-flag setting is false, " +
				"and waits for Longhorn's volumes to be detached: look at its log (`kubectl -n " + s.Namespace + " logs job/longhorn-uninstall`)."
		}
		resp.Diagnostics.AddError("Uninstalling "+s.Type+" failed", detail)
	}
}

// confirmLonghornDeletion sets Longhorn's deleting-confirmation-flag: the Setting object (what
// longhorn-manager's uninstall checks) and the chart value (what Longhorn applies to its settings
// and documents for `helm uninstall`).
func (r *Resource) confirmLonghornDeletion(ctx context.Context, hc *helm.Client, s spec, diags *diag.Diagnostics) bool {
	if dyn, err := r.data.Kube.Dynamic(); err == nil {
		_, err := dyn.Resource(longhornSettingGVR).Namespace(s.Namespace).Patch(ctx, longhornDeletingFlag,
			k8stypes.MergePatchType, []byte(`{"value":"true"}`), metav1.PatchOptions{})
		if err != nil {
			tflog.Debug(ctx, "setting "+longhornDeletingFlag+" on the Setting object failed", map[string]any{"error": err.Error()})
		} else {
			tflog.Info(ctx, "set Longhorn setting "+longhornDeletingFlag+" to true")
		}
	}
	_, err := hc.SetValues(ctx, s.ReleaseName, s.Namespace, func(values map[string]any) {
		ds, _ := values["defaultSettings"].(map[string]any)
		if ds == nil {
			ds = map[string]any{}
		}
		ds["deletingConfirmationFlag"] = "true"
		values["defaultSettings"] = ds
	}, false, time.Minute)
	if err != nil {
		diags.AddError("Setting Longhorn's "+longhornDeletingFlag+" failed",
			fmt.Sprintf("The uninstall needs %s=true (Longhorn refuses to uninstall otherwise): %v", keyLonghornDeletingFlag, err))
		return false
	}
	tflog.Info(ctx, "upgraded the release with "+keyLonghornDeletingFlag+"=true before uninstalling")
	return true
}

// claimsOf lists the PersistentVolumeClaims (namespace/name) of the given StorageClasses.
func claimsOf(ctx context.Context, client kubernetes.Interface, classes []string) ([]string, error) {
	if len(classes) == 0 {
		return nil, nil
	}
	want := map[string]bool{}
	for _, c := range classes {
		want[c] = true
	}
	list, err := client.CoreV1().PersistentVolumeClaims("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, pvc := range list.Items {
		class := pvc.Annotations["volume.beta.kubernetes.io/storage-class"]
		if pvc.Spec.StorageClassName != nil {
			class = *pvc.Spec.StorageClassName
		}
		if want[class] {
			out = append(out, fmt.Sprintf("%s/%s (class %s)", pvc.Namespace, pvc.Name, class))
		}
	}
	sort.Strings(out)
	return out, nil
}

// ImportState imports a release by `<namespace>/<release_name>`.
func (r *Resource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	ns, name, ok := strings.Cut(req.ID, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		resp.Diagnostics.AddError("Invalid import id", "Import a storage backend by <namespace>/<release_name>, e.g. openebs/openebs; got "+req.ID+".")
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), req.ID)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("namespace"), ns)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("release_name"), name)...)
	resp.Diagnostics.Append(resp.Private.SetKey(ctx, privateImported, []byte(`true`))...)
}
