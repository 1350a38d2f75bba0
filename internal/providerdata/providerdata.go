// Package providerdata is what the provider's Configure hands to every resource and data source:
// the shared Kubernetes clients and, for types that reach nodes, the SSH node access.
package providerdata

import (
	"errors"
	"fmt"
	"sync"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

// Data is shared by all resources and data sources of one provider instance. Terraform
// configures the provider anew for every plan and apply, so what Data remembers (the snapshots,
// the nodes looked up) lasts one Terraform run.
type Data struct {
	Kube  *kube.Clients
	Nodes *NodeAccess

	// StorageClasses and PersistentVolumes serve refreshes (Read) from one LIST per kind; see
	// kube.Snapshot. Writes read live and record what they wrote here.
	StorageClasses    *kube.Snapshot[storagev1.StorageClass]
	PersistentVolumes *kube.Snapshot[corev1.PersistentVolume]

	nodesMu sync.Mutex
	nodes   map[string]*nodeEntry
}

// New returns the Data for one provider configuration.
func New(clients *kube.Clients, nodes *NodeAccess) *Data {
	return &Data{
		Kube:              clients,
		Nodes:             nodes,
		StorageClasses:    kube.StorageClassSnapshot(clients.Typed),
		PersistentVolumes: kube.PersistentVolumeSnapshot(clients.Typed),
		nodes:             map[string]*nodeEntry{},
	}
}

// From type-asserts the ProviderData a resource or data source receives in Configure. It returns
// nil without diagnostics when the provider is not configured yet (Terraform calls Configure on
// resources before the provider's own Configure during validation).
func From(providerData any, diags *diag.Diagnostics) *Data {
	if providerData == nil {
		return nil
	}
	data, ok := providerData.(*Data)
	if !ok {
		diags.AddError("Unexpected provider data",
			fmt.Sprintf("Expected *providerdata.Data, got %T. This is a bug in the provider; please report it.", providerData))
		return nil
	}
	return data
}

var errNotConfigured = errors.New("the clusterstorage provider was not configured before this resource was used; " +
	"this is a bug in the provider or in Terraform, please report it")

// KubeClient returns the shared clientset, or nil with an error diagnostic when the provider is
// not configured or the cluster cannot be reached. It is safe to call on a nil *Data.
func (d *Data) KubeClient(diags *diag.Diagnostics) kubernetes.Interface {
	if d == nil || d.Kube == nil {
		diags.AddError("Provider not configured", errNotConfigured.Error())
		return nil
	}
	client, err := d.Kube.Typed()
	if err != nil {
		diags.AddError("Cannot reach the Kubernetes cluster", err.Error())
		return nil
	}
	return client
}
