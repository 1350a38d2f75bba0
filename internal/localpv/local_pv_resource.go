// Package localpv implements the clusterstorage_local_pv resource: a local PersistentVolume pinned
// to a node, with its directory made on the node over SSH.
package localpv

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
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/importmark"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/node"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/providerdata"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/tfconv"
)

var (
	_ resource.ResourceWithConfigure      = &Resource{}
	_ resource.ResourceWithImportState    = &Resource{}
	_ resource.ResourceWithMoveState      = &Resource{}
	_ resource.ResourceWithModifyPlan     = &Resource{}
	_ resource.ResourceWithValidateConfig = &Resource{}
	_ resource.ResourceWithIdentity       = &Resource{}
)

const (
	defaultCreateTimeout = 5 * time.Minute
	defaultDeleteTimeout = 5 * time.Minute
	phaseWait            = 10 * time.Second
	// pvProtectionFinalizer is the finalizer Kubernetes puts on every volume so that one bound to
	// a claim is not removed while in use.
	pvProtectionFinalizer = "kubernetes.io/pv-protection"
)

// NewResource returns the clusterstorage_local_pv resource.
func NewResource() resource.Resource {
	return &Resource{}
}

// Resource manages one local PersistentVolume and its directory.
type Resource struct {
	data *providerdata.Data
}

// Metadata sets the type name.
func (r *Resource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_local_pv"
}

// Configure receives the provider's shared clients and node access.
func (r *Resource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.data = providerdata.From(req.ProviderData, &resp.Diagnostics)
}

// IdentitySchema describes the volume's resource identity: its name.
func (r *Resource) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	resp.IdentitySchema = importmark.NameIdentitySchema("The PersistentVolume name.")
}

// ValidateConfig checks combinations of attributes no single validator can see. A node_affinity
// not known yet (a for over values computed during apply) is checked once it is.
func (r *Resource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	config := req.Config
	tfconv.Pending(&config.Raw, &resp.Diagnostics, "node_affinity")
	var m model
	resp.Diagnostics.Append(config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	createDir := m.CreateDirectory.IsNull() || m.CreateDirectory.ValueBool()
	if m.VolumeMode.ValueString() == string(corev1.PersistentVolumeBlock) && createDir && !m.CreateDirectory.IsUnknown() {
		resp.Diagnostics.AddAttributeError(path.Root("create_directory"), "Block volumes need an existing device",
			"With volume_mode = \"Block\", path is a block device on the node: set create_directory = false.")
	}
	if m.DeleteDirectoryOnDestroy.ValueBool() && !createDir {
		resp.Diagnostics.AddAttributeError(path.Root("delete_directory_on_destroy"), "Directory not managed",
			"delete_directory_on_destroy needs create_directory = true: the provider only removes directories it manages.")
	}
	if m.ForceDeleteData.ValueBool() && !m.DeleteDirectoryOnDestroy.ValueBool() && !m.DeleteDirectoryOnDestroy.IsUnknown() {
		resp.Diagnostics.AddAttributeError(path.Root("force_delete_data"), "force_delete_data without delete_directory_on_destroy",
			"force_delete_data only matters when delete_directory_on_destroy = true.")
	}
	for i, a := range m.NodeAffinity {
		if a.Operator.IsUnknown() || a.Values.IsUnknown() {
			continue
		}
		n := len(a.Values.Elements())
		p := path.Root("node_affinity").AtListIndex(i).AtName("values")
		switch op := a.Operator.ValueString(); {
		case (op == "In" || op == "NotIn") && n == 0:
			resp.Diagnostics.AddAttributeError(p, "Missing values", "Operator "+op+" needs at least one value.")
		case (op == "Exists" || op == "DoesNotExist") && n > 0:
			resp.Diagnostics.AddAttributeError(p, "Unexpected values", "Operator "+op+" takes no values.")
		case (op == "Gt" || op == "Lt") && n != 1:
			resp.Diagnostics.AddAttributeError(p, "Wrong number of values", "Operator "+op+" takes exactly one integer value.")
		}
		if a.Key.ValueString() == hostnameLabel {
			resp.Diagnostics.AddAttributeError(path.Root("node_affinity").AtListIndex(i).AtName("key"), "Use node",
				"The volume is already pinned to `node` through "+hostnameLabel+"; set node instead.")
		}
	}
}

// ModifyPlan plans the directory back into existence when it went missing on the node.
func (r *Resource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return
	}
	var createDir types.Bool
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("create_directory"), &createDir)...)
	if createDir.IsUnknown() {
		return
	}
	want := types.BoolNull()
	if createDir.ValueBool() {
		want = types.BoolValue(true)
	}
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("directory_exists"), want)...)
}

// Create makes the directory on the node (idempotent), then the volume pinned to the node.
func (r *Resource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan model
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	s, diags := plan.spec(ctx)
	resp.Diagnostics.Append(diags...)
	timeout, diags := plan.Timeouts.Create(ctx, defaultCreateTimeout)
	resp.Diagnostics.Append(diags...)
	client := r.data.KubeClient(&resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	n, err := r.data.Node(ctx, s.Node)
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("node"), "Unknown node", err.Error())
		return
	}
	hostname := n.Labels[hostnameLabel]
	if hostname == "" {
		hostname = n.Name
	}

	var dir *node.FileInfo
	if s.CreateDirectory {
		host, err := r.data.HostFor(n)
		if err != nil {
			resp.Diagnostics.AddError("Cannot reach node "+s.Node, err.Error())
			return
		}
		var madeDir bool
		if dir, madeDir = makeDir(ctx, host, s, &resp.Diagnostics); resp.Diagnostics.HasError() {
			return
		}
		defer func() {
			if resp.Diagnostics.HasError() && madeDir {
				// The volume was not made: take back the empty directory this apply created.
				if err := host.RemoveDir(context.WithoutCancel(ctx), s.Path); err != nil {
					resp.Diagnostics.AddWarning("Leftover directory", "The empty directory "+s.Path+" on "+s.Node+" could not be removed: "+err.Error())
				}
			}
		}()
	}

	tflog.Debug(ctx, "creating PersistentVolume", map[string]any{"name": s.Name, "node": s.Node, "path": s.Path})
	pv, err := create(ctx, client, s, hostname)
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("name"), "Creating PersistentVolume "+s.Name+" failed", err.Error())
		return
	}
	resp.Diagnostics.Append(setUID(ctx, resp.Private, pv)...)
	pv = settled(ctx, client, pv)
	r.data.PersistentVolumes.Put(pv)
	plan.observed(pv, dir, false)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	resp.Diagnostics.Append(importmark.SetNameIdentity(ctx, resp.Identity, pv.Name)...)
	importmark.ClearLater(ctx, client.CoreV1().PersistentVolumes(), "PersistentVolume", pv.Name)
}

// create makes the volume, marked pending (importmark.PendingAnnotation) until a moment after
// Create returns (importmark.ClearLater). A volume of the name left by a create whose provider
// died is taken over when it is the same volume (node, path, mode), its changeable fields set as
// planned (and still marked).
func create(ctx context.Context, client kubernetes.Interface, s spec, hostname string) (*corev1.PersistentVolume, error) {
	return importmark.Create(ctx, client.CoreV1().PersistentVolumes(), s.object(hostname), "PersistentVolume", "clusterstorage_local_pv",
		func(orphan *corev1.PersistentVolume) error {
			if orphan.Spec.Local == nil || orphan.Spec.Local.Path != s.Path || nodeOf(orphan) != hostname || ptr.Deref(orphan.Spec.VolumeMode, "") != s.VolumeMode {
				return errors.New("it is another node's, path's or volume mode's volume")
			}
			s.applyMutable(orphan, nil)
			return nil
		})
}

// Read refreshes the volume and checks the directory on the node. It reads the provider's
// snapshot of all volumes (one LIST per Terraform run), not one GET per volume.
func (r *Resource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state model
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	// Read reads the provider's snapshot; the client only clears a mark a killed create left.
	client := r.data.KubeClient(&resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	// Set on every path, a removal too: Terraform 1.11 and older (and a state written before
	// identities) send none, and the framework requires one after each Read.
	resp.Diagnostics.Append(importmark.SetNameIdentity(ctx, resp.Identity, state.ID.ValueString())...)
	imported, diags := importmark.FirstRead(ctx, req.Private, resp.Private)
	resp.Diagnostics.Append(diags...)

	pv, err := r.data.PersistentVolumes.Get(ctx, state.ID.ValueString())
	if kube.IsNotFound(err) {
		tflog.Info(ctx, "PersistentVolume is gone; removing it from state", map[string]any{"name": state.ID.ValueString()})
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		resp.Diagnostics.AddError("Reading PersistentVolume "+state.ID.ValueString()+" failed", err.Error())
		return
	}
	recorded, diags := recordedUID(ctx, req.Private)
	resp.Diagnostics.Append(diags...)
	if recorded != "" && pv.UID != recorded {
		resp.Diagnostics.AddWarning("PersistentVolume "+pv.Name+" was replaced outside Terraform",
			fmt.Sprintf("The PersistentVolume named %s now has UID %s, not %s, the one this resource created: someone else deleted ours and made this one. "+
				"It is not managed by this resource, which is removed from state; its directory on the node is left alone. "+
				"To manage the new volume, import it (`terraform import` or an `import {}` block), or choose another name.", pv.Name, pv.UID, recorded))
		resp.State.RemoveResource(ctx)
		return
	}
	if _, marked := pv.Annotations[importmark.PendingAnnotation]; marked && recorded == pv.UID {
		// A provider killed just after answering its create left the mark on a volume in state.
		resp.Diagnostics.Append(importmark.ClearPending(ctx, client.CoreV1().PersistentVolumes(), "PersistentVolume", pv.Name)...)
	}
	if pv.Spec.Local == nil {
		resp.Diagnostics.AddError("Not a local volume", "PersistentVolume "+pv.Name+" has no `local` source; it cannot be managed as clusterstorage_local_pv.")
		return
	}
	if imported && nodeOf(pv) == "" {
		resp.Diagnostics.AddError("Volume not pinned to a node",
			"PersistentVolume "+pv.Name+" has no `kubernetes.io/hostname In [<node>]` node-affinity requirement, so it cannot be managed as "+
				"clusterstorage_local_pv, which needs to know the node its directory is on. Pin it to its node "+
				"(spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions: {key: kubernetes.io/hostname, operator: In, values: [<node>]}; "+
				"Kubernetes does not let an existing volume's node affinity change, so recreate it with kubectl), then import it again; "+
				"or describe it with a new clusterstorage_local_pv resource instead of importing it.")
		return
	}

	var dir *node.FileInfo
	if imported || state.CreateDirectory.ValueBool() {
		dir = r.statDir(ctx, nodeOf(pv), pv.Spec.Local.Path, &resp.Diagnostics)
	}
	state.observed(pv, dir, imported)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
	if recorded == "" {
		// Imported, or made by a provider version that did not record it.
		resp.Diagnostics.Append(setUID(ctx, resp.Private, pv)...)
	}
}

// statDir looks at the directory; an unreachable node is a warning, not a failed refresh, and
// leaves directory_exists as it was.
func (r *Resource) statDir(ctx context.Context, nodeName, dirPath string, diags *diag.Diagnostics) *node.FileInfo {
	host, err := r.data.Host(ctx, nodeName)
	if err == nil {
		var fi node.FileInfo
		if fi, err = host.Stat(ctx, dirPath); err == nil {
			return &fi
		}
	}
	diags.AddWarning("Could not check the volume directory",
		fmt.Sprintf("The directory %s on node %s could not be checked: %v. The volume itself was refreshed.", dirPath, nodeName, err))
	return nil
}

// Update changes what Kubernetes lets a volume change, and fixes the directory.
func (r *Resource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state model
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	s, diags := plan.spec(ctx)
	resp.Diagnostics.Append(diags...)
	prev, diags := state.spec(ctx)
	resp.Diagnostics.Append(diags...)
	client := r.data.KubeClient(&resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}

	recorded, diags := recordedUID(ctx, req.Private)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}

	var dir *node.FileInfo
	if s.CreateDirectory {
		host, err := r.data.Host(ctx, s.Node)
		if err != nil {
			resp.Diagnostics.AddError("Cannot reach node "+s.Node, err.Error())
			return
		}
		if dir, _ = makeDir(ctx, host, s, &resp.Diagnostics); resp.Diagnostics.HasError() {
			return
		}
	}

	var updated *corev1.PersistentVolume
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		live, err := client.CoreV1().PersistentVolumes().Get(ctx, s.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if recorded != "" && live.UID != recorded {
			return fmt.Errorf("the PersistentVolume named %s now has UID %s, not %s, the one this resource created: "+
				"it was replaced outside Terraform and is left alone; refresh (terraform plan) to drop it from state", s.Name, live.UID, recorded)
		}
		s.applyMutable(live, prev.Labels)
		updated, err = client.CoreV1().PersistentVolumes().Update(ctx, live, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		resp.Diagnostics.AddError("Updating PersistentVolume "+s.Name+" failed", err.Error())
		return
	}
	r.data.PersistentVolumes.Put(updated)
	plan.observed(updated, dir, false)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	resp.Diagnostics.Append(importmark.SetNameIdentity(ctx, resp.Identity, updated.Name)...)
}

// Delete removes the volume and, only when asked, the directory. A non-empty directory without
// force_delete_data is refused before anything is deleted.
func (r *Resource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state model
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	timeout, diags := state.Timeouts.Delete(ctx, defaultDeleteTimeout)
	resp.Diagnostics.Append(diags...)
	client := r.data.KubeClient(&resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	name, nodeName, dirPath := state.ID.ValueString(), state.Node.ValueString(), state.Path.ValueString()
	recorded, diags := recordedUID(ctx, req.Private)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}

	var host *node.Host
	if state.DeleteDirectoryOnDestroy.ValueBool() {
		var err error
		if host, err = r.data.Host(ctx, nodeName); err != nil {
			resp.Diagnostics.AddError("Cannot reach node "+nodeName, "The directory is to be deleted, but: "+err.Error()+" Nothing was deleted.")
			return
		}
		if err := checkDeletable(ctx, host, dirPath); err != nil {
			resp.Diagnostics.AddError("Refusing to delete "+dirPath+" on "+nodeName, err.Error()+
				". Nothing was deleted. Remove the symbolic link if it does not belong there; or, to destroy only the volume and leave "+
				"the directory to you, set delete_directory_on_destroy = false and create_directory = false (and apply).")
			return
		}
		fi, err := host.Stat(ctx, dirPath)
		if err != nil {
			resp.Diagnostics.AddError("Checking "+dirPath+" on "+nodeName+" failed", err.Error()+" Nothing was deleted.")
			return
		}
		if fi.Exists && !fi.Empty && !state.ForceDeleteData.ValueBool() {
			resp.Diagnostics.AddError("Directory holds data",
				fmt.Sprintf("%s on node %s is not empty, and delete_directory_on_destroy only removes empty directories. "+
					"Set force_delete_data = true (and apply) to delete the data too, or set delete_directory_on_destroy = false to keep it. "+
					"Nothing was deleted.", dirPath, nodeName))
			return
		}
	}

	// An empty directory of a volume no claim holds is removed before the volume: a destroy cut
	// short between the two then leaves the volume in state, and the next destroy finishes,
	// where the other order would leave an empty directory nobody records. A volume a claim may
	// still use keeps its directory until it is gone.
	dirFirst := host != nil && !state.ForceDeleteData.ValueBool() && unclaimed(ctx, client, name, recorded)
	if dirFirst {
		if err := removeEmptyDir(ctx, host, dirPath); err != nil {
			resp.Diagnostics.AddError("Removing "+dirPath+" on "+nodeName+" failed", err.Error()+" Nothing was deleted.")
			return
		}
	}
	tflog.Debug(ctx, "deleting PersistentVolume", map[string]any{"name": name, "uid": string(recorded)})
	err := deleteAndWait(ctx, client, name, recorded)
	var replaced *replacedError
	if errors.As(err, &replaced) {
		resp.Diagnostics.AddWarning("PersistentVolume "+name+" was replaced outside Terraform",
			replaced.Error()+": it is not the one this resource created, so it and the directory were left alone. Nothing was deleted.")
		return
	}
	if err != nil {
		resp.Diagnostics.AddError("Deleting PersistentVolume "+name+" failed", err.Error())
		return
	}
	r.data.PersistentVolumes.Forget(name)
	if host == nil || dirFirst {
		return
	}
	if state.ForceDeleteData.ValueBool() {
		tflog.Warn(ctx, "deleting the volume directory and its data", map[string]any{"node": nodeName, "path": dirPath})
		// All the time the delete timeout leaves: a large tree takes a while, and the SSH
		// command timeout is meant for short commands.
		until, _ := ctx.Deadline()
		_, err := host.Exec(ctx, node.NewCommand("rm", "-rf", "--one-file-system", "--", dirPath), node.ExecOptions{Timeout: max(time.Until(until), time.Second)})
		if err != nil {
			resp.Diagnostics.AddError("Deleting "+dirPath+" on "+nodeName+" failed", "The volume was deleted, but its directory was not: "+err.Error())
		}
		return
	}
	if err := removeEmptyDir(ctx, host, dirPath); err != nil {
		resp.Diagnostics.AddError("Removing "+dirPath+" on "+nodeName+" failed", "The volume was deleted, but its directory was not: "+err.Error())
	}
}

// removeEmptyDir removes the volume's directory, which must be empty; one already gone is fine.
func removeEmptyDir(ctx context.Context, host *node.Host, dirPath string) error {
	tflog.Info(ctx, "removing the empty volume directory", map[string]any{"node": host.String(), "path": dirPath})
	err := host.RemoveDir(ctx, dirPath)
	if errors.Is(err, node.ErrDirNotEmpty) {
		err = fmt.Errorf("%w (data was written after the check; it was kept)", err)
	}
	return err
}

// unclaimed reports whether the volume (ours, by uid) is neither bound nor reserved for a claim;
// false also when it cannot be read.
func unclaimed(ctx context.Context, client kubernetes.Interface, name string, uid k8stypes.UID) bool {
	pv, err := client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false
	}
	return (uid == "" || pv.UID == uid) && pv.Spec.ClaimRef == nil && pv.Status.Phase == corev1.VolumeAvailable
}

// MoveState takes over a hashicorp/kubernetes `kubernetes_persistent_volume_v1` or `kubernetes_persistent_volume` with a `moved` block: the volume its
// metadata names is imported and adopted as an import block adopts it; nothing in the cluster changes.
func (r *Resource) MoveState(context.Context) []resource.StateMover {
	name := func(state map[string]any) (string, error) { return importmark.StringAt(state, "metadata", "name") }
	return importmark.StateMovers(r,
		importmark.Source{Provider: "hashicorp/kubernetes", Type: "kubernetes_persistent_volume_v1", ID: name},
		importmark.Source{Provider: "hashicorp/kubernetes", Type: "kubernetes_persistent_volume", ID: name},
	)
}

// ImportState imports a volume by name (an import ID, or an import block's identity); node and
// path come from the volume.
func (r *Resource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	importmark.ImportByID(ctx, req, resp)
}

// settled gives the PV controller a moment to move a new volume out of Pending, so state records
// the phase users see (Available, or Bound when a claim was waiting). If it does not within
// phaseWait, the volume is recorded as it is: the next refresh catches up.
func settled(ctx context.Context, client kubernetes.Interface, pv *corev1.PersistentVolume) *corev1.PersistentVolume {
	// A timeout only ends the wait; the volume exists either way. A volume deleted meanwhile is
	// recorded as created: the next refresh finds it gone.
	latest, _ := kube.WaitFor(ctx, client.CoreV1().PersistentVolumes(), pv.Name, pv, kube.Wait{What: "the volume's phase", Timeout: phaseWait},
		func(got *corev1.PersistentVolume) (bool, string, error) {
			return got != nil && got.Status.Phase != "" && got.Status.Phase != corev1.VolumePending, "", nil
		})
	if latest == nil || latest.UID != pv.UID {
		return pv
	}
	return latest
}

// makeDir makes the volume's directory on the node with its mode and owner, after checking that
// what is at the path (followed through any symbolic links above it) may be a volume, and is a
// directory if anything. It reports whether it made the directory.
func makeDir(ctx context.Context, host *node.Host, s spec, diags *diag.Diagnostics) (*node.FileInfo, bool) {
	real, err := host.RealPath(ctx, s.Path)
	if err != nil {
		diags.AddError("Checking "+s.Path+" on "+s.Node+" failed", err.Error())
		return nil, false
	}
	if err := CheckPath(real); real != s.Path && err != nil {
		diags.AddAttributeError(path.Root("path"), "Unsafe path",
			fmt.Sprintf("%s on node %s leads through a symbolic link to %s: %v. Choose a path that stays outside system directories.", s.Path, s.Node, real, err))
		return nil, false
	}
	before, err := host.Stat(ctx, s.Path)
	if err != nil {
		diags.AddError("Checking "+s.Path+" on "+s.Node+" failed", err.Error())
		return nil, false
	}
	if before.Exists && !before.IsDir() {
		diags.AddAttributeError(path.Root("path"), "Path is not a directory",
			fmt.Sprintf("%s on node %s exists and is not a directory (mode %s); choose another path, or remove what is there.", s.Path, s.Node, before.Mode))
		return nil, false
	}
	tflog.Info(ctx, "making the volume directory on the node", map[string]any{"node": s.Node, "path": s.Path, "mode": s.Dir.Mode.String(), "existed": before.Exists})
	if err := host.MkdirAll(ctx, s.Path, s.Dir); err != nil {
		diags.AddError("Making directory "+s.Path+" on "+s.Node+" failed", err.Error())
		return nil, false
	}
	after, err := host.Stat(ctx, s.Path)
	if err == nil && !after.IsDir() {
		// Seen when the node shut down under the apply: its disk was unmounted between the two.
		err = fmt.Errorf("it was made, but is no longer there (%s; the node shutting down, or its disk unmounted?)", describe(after))
	}
	if err != nil {
		diags.AddError("Checking "+s.Path+" on "+s.Node+" failed", err.Error())
		return nil, !before.Exists
	}
	return &after, !before.Exists
}

// describe says what is at a path that should be a directory.
func describe(fi node.FileInfo) string {
	if !fi.Exists {
		return "nothing is at the path"
	}
	return "mode " + fi.Mode.String()
}

// checkDeletable says why the directory at dirPath must not be deleted: a path in or at a system
// directory, as written (a state from before the path checks, or an imported volume) or as the
// node resolves it (a symbolic link placed above it since).
func checkDeletable(ctx context.Context, host *node.Host, dirPath string) error {
	if err := CheckPath(dirPath); err != nil {
		return err
	}
	real, err := host.RealPath(ctx, dirPath)
	if err != nil {
		return err
	}
	if err := CheckPath(real); err != nil {
		return fmt.Errorf("%s leads through a symbolic link to %s: %w", dirPath, real, err)
	}
	return nil
}

// privateUID is the private state key holding the UID of the volume this resource created (or
// imported): a volume of the same name with another UID is someone else's.
const privateUID = "uid"

func setUID(ctx context.Context, p importmark.Setter, pv *corev1.PersistentVolume) diag.Diagnostics {
	v, err := json.Marshal(string(pv.UID))
	if err != nil {
		var diags diag.Diagnostics
		diags.AddError("Recording the volume's UID failed", err.Error())
		return diags
	}
	return p.SetKey(ctx, privateUID, v)
}

// recordedUID returns the recorded UID, or "" when none is (a state from an older version).
func recordedUID(ctx context.Context, p importmark.Getter) (k8stypes.UID, diag.Diagnostics) {
	v, diags := p.GetKey(ctx, privateUID)
	if v == nil || diags.HasError() {
		return "", diags
	}
	var uid string
	if err := json.Unmarshal(v, &uid); err != nil {
		diags.AddError("Reading the volume's recorded UID failed", err.Error())
	}
	return k8stypes.UID(uid), diags
}

// replacedError is deleteAndWait's error for a volume that has another UID than the recorded one.
type replacedError struct {
	name      string
	uid, want k8stypes.UID
}

func (e *replacedError) Error() string {
	return fmt.Sprintf("the PersistentVolume named %s has UID %s, not %s", e.name, e.uid, e.want)
}

// deleteAndWait deletes the volume, if it still has the UID uid (when set), and waits until it is
// gone. A volume still bound to a claim in use is held by Kubernetes' pv-protection finalizer;
// the error says so. A volume no claim holds is released from that finalizer here, as the
// pv-protection controller would release it (see releaseProtection).
func deleteAndWait(ctx context.Context, client kubernetes.Interface, name string, uid k8stypes.UID) error {
	opts := metav1.DeleteOptions{}
	if uid != "" {
		opts.Preconditions = metav1.NewUIDPreconditions(string(uid))
	}
	err := client.CoreV1().PersistentVolumes().Delete(ctx, name, opts)
	if kube.IsNotFound(err) {
		return nil
	}
	if apierrors.IsConflict(err) && uid != "" {
		if pv, getErr := client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{}); getErr == nil && pv.UID != uid {
			return &replacedError{name: name, uid: pv.UID, want: uid}
		}
	}
	if err != nil {
		return err
	}
	deadline, _ := ctx.Deadline()
	_, err = kube.WaitFor(ctx, client.CoreV1().PersistentVolumes(), name, nil, kube.Wait{What: "PersistentVolume " + name + " to be deleted", Timeout: time.Until(deadline)},
		func(pv *corev1.PersistentVolume) (bool, string, error) {
			if pv == nil {
				return true, "", nil
			}
			if uid != "" && pv.UID != uid {
				return true, "", nil // ours is gone; a new one took the name
			}
			if err := releaseProtection(ctx, client, pv); err != nil {
				if kube.IsNotFound(err) {
					return true, "", nil // the controller released it first
				}
				tflog.Debug(ctx, "leaving the pv-protection finalizer to Kubernetes", map[string]any{"name": name, "error": err.Error()})
			}
			reason := "finalizers " + strings.Join(pv.Finalizers, ", ")
			if ref := pv.Spec.ClaimRef; ref != nil && pv.Status.Phase == corev1.VolumeBound {
				reason = fmt.Sprintf("it is still bound to claim %s/%s (delete the claim, or the pods using it, first)", ref.Namespace, ref.Name)
			}
			return false, reason, nil
		})
	return err
}

// releaseProtection removes the kubernetes.io/pv-protection finalizer from a volume being deleted
// that no claim holds, which makes the API server remove it. It is the step Kubernetes'
// pv-protection controller takes for such a volume, with the controller's check (the phase is not
// Bound) and a stricter one (no claim reference at all), made in an update conditioned on the
// version that was checked: if a claim binds the volume meanwhile, the update fails and the
// finalizer stays. Doing it here saves the wait for the controller, whose client is rate-limited
// (kube-controller-manager's default is 20 requests a second, shared by all the volumes being
// deleted). A volume with other finalizers, or one the check does not clear, is left to them.
func releaseProtection(ctx context.Context, client kubernetes.Interface, pv *corev1.PersistentVolume) error {
	if pv.DeletionTimestamp == nil || pv.Spec.ClaimRef != nil || pv.Status.Phase == corev1.VolumeBound ||
		len(pv.Finalizers) != 1 || pv.Finalizers[0] != pvProtectionFinalizer {
		return nil
	}
	released := pv.DeepCopy()
	released.Finalizers = nil
	_, err := client.CoreV1().PersistentVolumes().Update(ctx, released, metav1.UpdateOptions{})
	return err
}
