// Package storageclass implements the clusterstorage_storage_class resource.
package storageclass

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/importmark"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/providerdata"
)

var (
	_ resource.ResourceWithConfigure   = &Resource{}
	_ resource.ResourceWithImportState = &Resource{}
	_ resource.ResourceWithMoveState   = &Resource{}
	_ resource.ResourceWithIdentity    = &Resource{}
)

// NewResource returns the clusterstorage_storage_class resource.
func NewResource() resource.Resource {
	return &Resource{}
}

// Resource manages one StorageClass.
type Resource struct {
	data *providerdata.Data
}

// Metadata sets the type name.
func (r *Resource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_storage_class"
}

// Configure receives the provider's shared clients.
func (r *Resource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.data = providerdata.From(req.ProviderData, &resp.Diagnostics)
}

// IdentitySchema describes the class's resource identity: its name.
func (r *Resource) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	resp.IdentitySchema = importmark.NameIdentitySchema("The StorageClass name.")
}

// Create creates the class and, when it is the default, takes the default mark from the others.
func (r *Resource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan model
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	s, diags := plan.spec(ctx)
	resp.Diagnostics.Append(diags...)
	client := r.data.KubeClient(&resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}

	tflog.Debug(ctx, "creating StorageClass", map[string]any{"name": s.Name, "provisioner": s.Provisioner, "default": s.Default})
	created, err := create(ctx, client, s)
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("name"), "Creating StorageClass "+s.Name+" failed", err.Error())
		return
	}
	r.data.StorageClasses.Put(created)
	plan.observed(created, s.Default, false)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	resp.Diagnostics.Append(importmark.SetNameIdentity(ctx, resp.Identity, created.Name)...)
	if s.Default {
		resp.Diagnostics.Append(r.clearOtherDefaults(ctx, client, s.Name)...)
	}
	importmark.ClearLater(ctx, client.StorageV1().StorageClasses(), "StorageClass", s.Name)
}

// create makes the class, marked pending (importmark.PendingAnnotation) until a moment after
// Create returns (importmark.ClearLater). A class of the name left by a create whose provider
// died is taken over, set as planned (and still marked); one that differs in what Kubernetes does
// not let change is refused.
func create(ctx context.Context, client kubernetes.Interface, s spec) (*storagev1.StorageClass, error) {
	return importmark.Create(ctx, client.StorageV1().StorageClasses(), s.object(), "StorageClass", "clusterstorage_storage_class",
		func(orphan *storagev1.StorageClass) error {
			s.applyTo(orphan, nil, nil)
			return nil
		})
}

// Read refreshes the state from the cluster; a deleted class is removed from state. It reads
// the provider's snapshot of all classes (one LIST per Terraform run), not one GET per class.
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
	// The first Read after an import adopts every label and annotation.
	imported, diags := importmark.FirstRead(ctx, req.Private, resp.Private)
	resp.Diagnostics.Append(diags...)

	sc, err := r.data.StorageClasses.Get(ctx, state.ID.ValueString())
	if kube.IsNotFound(err) {
		tflog.Info(ctx, "StorageClass is gone; removing it from state", map[string]any{"name": state.ID.ValueString()})
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		resp.Diagnostics.AddError("Reading StorageClass "+state.ID.ValueString()+" failed", err.Error())
		return
	}
	if _, marked := sc.Annotations[importmark.PendingAnnotation]; marked && !imported {
		// A provider killed just after answering its create left the mark on a class in state.
		resp.Diagnostics.Append(importmark.ClearPending(ctx, client.StorageV1().StorageClasses(), "StorageClass", sc.Name)...)
	}
	isDefault, err := soleDefault(ctx, r.data.StorageClasses, sc)
	if err != nil {
		resp.Diagnostics.AddError("Listing StorageClasses failed", err.Error())
		return
	}
	state.observed(sc, isDefault, imported)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

// Update changes the fields Kubernetes allows to change; the schema replaces the class for the rest.
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

	var updated *storagev1.StorageClass
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		live, err := client.StorageV1().StorageClasses().Get(ctx, s.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.applyTo(live, prev.Labels, prev.Annotations)
		tflog.Debug(ctx, "updating StorageClass", map[string]any{"name": s.Name, "default": s.Default})
		updated, err = client.StorageV1().StorageClasses().Update(ctx, live, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		resp.Diagnostics.AddError("Updating StorageClass "+s.Name+" failed", err.Error())
		return
	}
	r.data.StorageClasses.Put(updated)
	plan.observed(updated, s.Default, false)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	resp.Diagnostics.Append(importmark.SetNameIdentity(ctx, resp.Identity, updated.Name)...)
	if s.Default {
		resp.Diagnostics.Append(r.clearOtherDefaults(ctx, client, s.Name)...)
	}
}

// Delete deletes the class. Volumes provisioned from it are not affected.
func (r *Resource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state model
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	client := r.data.KubeClient(&resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	name := state.ID.ValueString()
	tflog.Debug(ctx, "deleting StorageClass", map[string]any{"name": name})
	err := client.StorageV1().StorageClasses().Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !kube.IsNotFound(err) {
		resp.Diagnostics.AddError("Deleting StorageClass "+name+" failed", err.Error())
		return
	}
	r.data.StorageClasses.Forget(name)
}

// MoveState takes over a hashicorp/kubernetes `kubernetes_storage_class_v1` or `kubernetes_storage_class` with a `moved` block: the class its
// metadata names is imported and adopted as an import block adopts it; nothing in the cluster changes.
func (r *Resource) MoveState(context.Context) []resource.StateMover {
	name := func(state map[string]any) (string, error) { return importmark.StringAt(state, "metadata", "name") }
	return importmark.StateMovers(r,
		importmark.Source{Provider: "hashicorp/kubernetes", Type: "kubernetes_storage_class_v1", ID: name},
		importmark.Source{Provider: "hashicorp/kubernetes", Type: "kubernetes_storage_class", ID: name},
	)
}

// ImportState imports a class by name (an import ID, or an import block's identity), adopting
// all its labels and annotations.
func (r *Resource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	importmark.ImportByID(ctx, req, resp)
}

// soleDefault reports whether sc is the cluster's one default class: marked default, with no
// other class marked too. A second default made outside Terraform thus shows as a diff.
func soleDefault(ctx context.Context, classes *kube.Snapshot[storagev1.StorageClass], sc *storagev1.StorageClass) (bool, error) {
	if !isMarkedDefault(sc) {
		return false, nil
	}
	all, err := classes.All(ctx)
	if err != nil {
		return false, err
	}
	for _, other := range all {
		if other.Name != sc.Name && isMarkedDefault(other) {
			return false, nil
		}
	}
	return true, nil
}

// clearOtherDefaults removes the default-class annotations from every class but keep.
func (r *Resource) clearOtherDefaults(ctx context.Context, client kubernetes.Interface, keep string) diag.Diagnostics {
	var diags diag.Diagnostics
	demoted, err := kube.DemoteDefaultClasses(ctx, client, keep)
	if err != nil {
		diags.AddError("Removing the default mark from other StorageClasses failed",
			fmt.Sprintf("%s is now the default class, but the other classes could not be listed to take their mark: %v. Apply again.", keep, err))
		return diags
	}
	for _, d := range demoted {
		if d.Err != nil {
			diags.AddError("Removing the default mark from StorageClass "+d.Name+" failed",
				fmt.Sprintf("%s is now the default class, but %s still claims to be: %v. Remove its %s annotation by hand or apply again.",
					keep, d.Name, d.Err, defaultClassAnnotation))
			continue
		}
		r.data.StorageClasses.Put(d.Object)
		tflog.Info(ctx, "removed the default mark from another StorageClass", map[string]any{"name": d.Name, "new_default": keep})
	}
	return diags
}
