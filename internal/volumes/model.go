package volumes

import (
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/types"
)

type model struct {
	ID              types.String  `tfsdk:"id"`
	StorageClass    types.String  `tfsdk:"storage_class"`
	Driver          types.String  `tfsdk:"driver"`
	Namespace       types.String  `tfsdk:"namespace"`
	LabelSelector   types.String  `tfsdk:"label_selector"`
	IncludeMigrated types.Bool    `tfsdk:"include_migrated"`
	Volumes         []volumeModel `tfsdk:"volumes"`
}

type volumeModel struct {
	Namespace    types.String    `tfsdk:"namespace"`
	Name         types.String    `tfsdk:"name"`
	Key          types.String    `tfsdk:"key"`
	StorageClass types.String    `tfsdk:"storage_class"`
	MigratedFrom types.String    `tfsdk:"migrated_from"`
	Driver       types.String    `tfsdk:"driver"`
	Volume       types.String    `tfsdk:"volume"`
	Size         types.String    `tfsdk:"size"`
	Node         types.String    `tfsdk:"node"`
	Phase        types.String    `tfsdk:"phase"`
	VolumeMode   types.String    `tfsdk:"volume_mode"`
	AccessModes  []types.String  `tfsdk:"access_modes"`
	Workloads    []workloadModel `tfsdk:"workloads"`
}

type workloadModel struct {
	Kind     types.String `tfsdk:"kind"`
	Name     types.String `tfsdk:"name"`
	Replicas types.Int64  `tfsdk:"replicas"`
}

// filter is the validated form of the data source's filters; "" matches anything.
type filter struct {
	StorageClass, Driver, Namespace, LabelSelector string
	// IncludeMigrated also matches claims migrated off StorageClass.
	IncludeMigrated bool
}

func (m model) filter() filter {
	return filter{
		StorageClass:    m.StorageClass.ValueString(),
		Driver:          m.Driver.ValueString(),
		Namespace:       m.Namespace.ValueString(),
		LabelSelector:   m.LabelSelector.ValueString(),
		IncludeMigrated: m.IncludeMigrated.ValueBool(),
	}
}

func (f filter) id() string {
	return "storage_class=" + f.StorageClass + ";driver=" + f.Driver + ";namespace=" + f.Namespace + ";label_selector=" + f.LabelSelector + fmt.Sprintf(";include_migrated=%t", f.IncludeMigrated)
}

func (v Volume) model() volumeModel {
	m := volumeModel{
		Namespace:    types.StringValue(v.Namespace),
		Name:         types.StringValue(v.Name),
		Key:          types.StringValue(v.Namespace + "/" + v.Name),
		StorageClass: types.StringValue(v.StorageClass),
		MigratedFrom: types.StringValue(v.MigratedFrom),
		Driver:       types.StringValue(v.Driver),
		Volume:       types.StringValue(v.Volume),
		Size:         types.StringValue(v.Size),
		Node:         types.StringValue(v.Node),
		Phase:        types.StringValue(v.Phase),
		VolumeMode:   types.StringValue(v.VolumeMode),
		AccessModes:  []types.String{},
		Workloads:    []workloadModel{},
	}
	for _, a := range v.AccessModes {
		m.AccessModes = append(m.AccessModes, types.StringValue(a))
	}
	for _, w := range v.Workloads {
		m.Workloads = append(m.Workloads, workloadModel{Kind: types.StringValue(w.Kind), Name: types.StringValue(w.Name), Replicas: types.Int64Value(int64(w.Replicas))})
	}
	return m
}
