package localpv

import (
	"context"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/node"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/tfconv"
)

const hostnameLabel = "kubernetes.io/hostname"

// Defaults of the optional attributes: the schema's Default, and what an import records.
const (
	defaultAccessMode               = corev1.ReadWriteOnce
	defaultVolumeMode               = corev1.PersistentVolumeFilesystem
	defaultReclaimPolicy            = corev1.PersistentVolumeReclaimRetain
	defaultCreateDirectory          = true
	defaultDirectoryMode            = "0755"
	defaultDeleteDirectoryOnDestroy = false
	defaultForceDeleteData          = false
)

type model struct {
	ID                       types.String    `tfsdk:"id"`
	Name                     types.String    `tfsdk:"name"`
	Node                     types.String    `tfsdk:"node"`
	Path                     types.String    `tfsdk:"path"`
	Capacity                 types.String    `tfsdk:"capacity"`
	StorageClassName         types.String    `tfsdk:"storage_class_name"`
	AccessModes              types.Set       `tfsdk:"access_modes"`
	VolumeMode               types.String    `tfsdk:"volume_mode"`
	ReclaimPolicy            types.String    `tfsdk:"reclaim_policy"`
	MountOptions             types.List      `tfsdk:"mount_options"`
	Labels                   types.Map       `tfsdk:"labels"`
	NodeAffinity             []affinityModel `tfsdk:"node_affinity"`
	CreateDirectory          types.Bool      `tfsdk:"create_directory"`
	DirectoryMode            types.String    `tfsdk:"directory_mode"`
	DirectoryOwner           types.String    `tfsdk:"directory_owner"`
	DirectoryGroup           types.String    `tfsdk:"directory_group"`
	DeleteDirectoryOnDestroy types.Bool      `tfsdk:"delete_directory_on_destroy"`
	ForceDeleteData          types.Bool      `tfsdk:"force_delete_data"`
	DirectoryExists          types.Bool      `tfsdk:"directory_exists"`
	Phase                    types.String    `tfsdk:"phase"`
	Claim                    types.String    `tfsdk:"claim"`
	Timeouts                 timeouts.Value  `tfsdk:"timeouts"`
}

type affinityModel struct {
	Key      types.String `tfsdk:"key"`
	Operator types.String `tfsdk:"operator"`
	Values   types.List   `tfsdk:"values"`
}

// spec is the planned volume in plain Go.
type spec struct {
	Name             string
	Node             string
	Path             string
	Capacity         k8sresource.Quantity
	StorageClassName string
	AccessModes      []corev1.PersistentVolumeAccessMode
	VolumeMode       corev1.PersistentVolumeMode
	ReclaimPolicy    corev1.PersistentVolumeReclaimPolicy
	MountOptions     []string
	Labels           map[string]string
	Affinity         []corev1.NodeSelectorRequirement
	CreateDirectory  bool
	Dir              node.DirOptions
}

func (m model) spec(ctx context.Context) (spec, diag.Diagnostics) {
	var diags diag.Diagnostics
	s := spec{
		Name:             m.Name.ValueString(),
		Node:             m.Node.ValueString(),
		Path:             m.Path.ValueString(),
		StorageClassName: m.StorageClassName.ValueString(),
		VolumeMode:       corev1.PersistentVolumeMode(m.VolumeMode.ValueString()),
		ReclaimPolicy:    corev1.PersistentVolumeReclaimPolicy(m.ReclaimPolicy.ValueString()),
		MountOptions:     tfconv.StringList(ctx, m.MountOptions, &diags),
		Labels:           tfconv.StringMap(ctx, m.Labels, &diags),
		CreateDirectory:  m.CreateDirectory.ValueBool(),
		Dir: node.DirOptions{
			Owner: m.DirectoryOwner.ValueString(),
			Group: m.DirectoryGroup.ValueString(),
		},
	}
	q, err := k8sresource.ParseQuantity(m.Capacity.ValueString())
	if err != nil {
		diags.AddAttributeError(path.Root("capacity"), "Invalid capacity",
			fmt.Sprintf("%q is not a Kubernetes quantity (%v); write it like `10Gi` or `500M`.", m.Capacity.ValueString(), err))
	}
	s.Capacity = q
	for _, mode := range tfconv.StringSet(ctx, m.AccessModes, &diags) {
		s.AccessModes = append(s.AccessModes, corev1.PersistentVolumeAccessMode(mode))
	}
	mode, err := parseMode(m.DirectoryMode.ValueString())
	if err != nil {
		diags.AddAttributeError(path.Root("directory_mode"), "Invalid directory_mode", err.Error()+".")
	}
	s.Dir.Mode = mode
	for _, a := range m.NodeAffinity {
		s.Affinity = append(s.Affinity, corev1.NodeSelectorRequirement{
			Key:      a.Key.ValueString(),
			Operator: corev1.NodeSelectorOperator(a.Operator.ValueString()),
			Values:   tfconv.StringList(ctx, a.Values, &diags),
		})
	}
	return s, diags
}

// object renders the PersistentVolume; hostname is the node's kubernetes.io/hostname label.
func (s spec) object(hostname string) *corev1.PersistentVolume {
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: s.Name},
		Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: s.Path}},
			AccessModes:            s.AccessModes,
			StorageClassName:       s.StorageClassName,
			VolumeMode:             &s.VolumeMode,
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: append([]corev1.NodeSelectorRequirement{{
						Key: hostnameLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{hostname},
					}}, s.Affinity...),
				}},
			}},
		},
	}
	s.applyMutable(pv, nil)
	return pv
}

// applyMutable writes the fields Kubernetes lets an existing volume change.
func (s spec) applyMutable(pv *corev1.PersistentVolume, prevLabels map[string]string) {
	pv.Spec.Capacity = corev1.ResourceList{corev1.ResourceStorage: s.Capacity}
	pv.Spec.PersistentVolumeReclaimPolicy = s.ReclaimPolicy
	pv.Spec.MountOptions = s.MountOptions
	pv.Labels = tfconv.MergeManaged(pv.Labels, prevLabels, s.Labels)
}

// observed writes the live volume into the model. dir is what SSH saw of the directory, nil when
// it was not looked at (create_directory = false, or the node could not be reached).
func (m *model) observed(pv *corev1.PersistentVolume, dir *node.FileInfo, imported bool) {
	m.ID = types.StringValue(pv.Name)
	m.Name = types.StringValue(pv.Name)
	if pv.Spec.Local != nil {
		m.Path = types.StringValue(pv.Spec.Local.Path)
	}
	if n := nodeOf(pv); n != "" {
		m.Node = types.StringValue(n)
	}
	live := pv.Spec.Capacity[corev1.ResourceStorage]
	if prior, err := k8sresource.ParseQuantity(m.Capacity.ValueString()); err != nil || prior.Cmp(live) != 0 {
		m.Capacity = types.StringValue(live.String())
	}
	m.StorageClassName = types.StringNull()
	if pv.Spec.StorageClassName != "" {
		m.StorageClassName = types.StringValue(pv.Spec.StorageClassName)
	}
	modes := make([]string, 0, len(pv.Spec.AccessModes))
	for _, am := range pv.Spec.AccessModes {
		modes = append(modes, string(am))
	}
	m.AccessModes = tfconv.Set(modes)
	m.VolumeMode = types.StringValue(string(defaultVolumeMode))
	if pv.Spec.VolumeMode != nil {
		m.VolumeMode = types.StringValue(string(*pv.Spec.VolumeMode))
	}
	m.ReclaimPolicy = types.StringValue(string(pv.Spec.PersistentVolumeReclaimPolicy))
	m.MountOptions = tfconv.List(pv.Spec.MountOptions, m.MountOptions)
	m.Labels = tfconv.Map(pv.Labels, m.Labels, imported)
	m.NodeAffinity = nil
	for _, r := range extraAffinity(pv) {
		m.NodeAffinity = append(m.NodeAffinity, affinityModel{
			Key:      types.StringValue(r.Key),
			Operator: types.StringValue(string(r.Operator)),
			Values:   tfconv.List(r.Values, types.ListNull(types.StringType)),
		})
	}
	m.Phase = types.StringValue(string(pv.Status.Phase))
	m.Claim = types.StringValue("")
	if ref := pv.Spec.ClaimRef; ref != nil && pv.Status.Phase == corev1.VolumeBound {
		m.Claim = types.StringValue(ref.Namespace + "/" + ref.Name)
	}
	if imported {
		m.CreateDirectory = types.BoolValue(defaultCreateDirectory)
		m.DeleteDirectoryOnDestroy = types.BoolValue(defaultDeleteDirectoryOnDestroy)
		m.ForceDeleteData = types.BoolValue(defaultForceDeleteData)
		m.DirectoryMode = types.StringValue(defaultDirectoryMode)
	}
	switch {
	case !m.CreateDirectory.ValueBool():
		m.DirectoryExists = types.BoolNull()
	case dir != nil:
		m.DirectoryExists = types.BoolValue(dir.Exists && dir.IsDir())
		if dir.Exists && dir.IsDir() {
			m.DirectoryMode = types.StringValue(formatMode(dir.Mode, m.DirectoryMode.ValueString()))
		}
	}
}

// nodeOf returns the node a volume is pinned to: the value of its kubernetes.io/hostname In term.
func nodeOf(pv *corev1.PersistentVolume) string {
	for _, term := range selectorTerms(pv) {
		for _, r := range term.MatchExpressions {
			if r.Key == hostnameLabel && r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
				return r.Values[0]
			}
		}
	}
	return ""
}

// extraAffinity returns the requirements besides the hostname one.
func extraAffinity(pv *corev1.PersistentVolume) []corev1.NodeSelectorRequirement {
	var out []corev1.NodeSelectorRequirement
	for _, term := range selectorTerms(pv) {
		for _, r := range term.MatchExpressions {
			if r.Key != hostnameLabel {
				out = append(out, r)
			}
		}
	}
	return out
}

func selectorTerms(pv *corev1.PersistentVolume) []corev1.NodeSelectorTerm {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return nil
	}
	return pv.Spec.NodeAffinity.Required.NodeSelectorTerms
}

func parseMode(s string) (fs.FileMode, error) {
	n, err := strconv.ParseUint(s, 8, 32)
	if err != nil || n > 0o7777 {
		return 0, fmt.Errorf("%q is not an octal mode such as 0755", s)
	}
	mode := fs.FileMode(n & 0o777)
	if n&0o4000 != 0 {
		mode |= fs.ModeSetuid
	}
	if n&0o2000 != 0 {
		mode |= fs.ModeSetgid
	}
	if n&0o1000 != 0 {
		mode |= fs.ModeSticky
	}
	return mode, nil
}

// formatMode renders a live mode in the style the user wrote (with or without a leading 0), so
// an unchanged mode causes no diff.
func formatMode(m fs.FileMode, style string) string {
	n := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		n |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		n |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		n |= 0o1000
	}
	out := fmt.Sprintf("%04o", n)
	if len(style) == 3 && strings.HasPrefix(out, "0") {
		return out[1:]
	}
	return out
}
