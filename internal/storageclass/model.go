package storageclass

import (
	"context"
	"maps"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/importmark"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/tfconv"
)

// Defaults of the optional attributes, as Kubernetes has them: the schema's Default and the
// observed value of a class that leaves them unset.
const (
	defaultReclaimPolicy     = corev1.PersistentVolumeReclaimDelete
	defaultVolumeBindingMode = storagev1.VolumeBindingImmediate
)

const (
	defaultClassAnnotation     = kube.DefaultClassAnnotation
	betaDefaultClassAnnotation = kube.BetaDefaultClassAnnotation
	lastAppliedAnnotation      = "kubectl.kubernetes.io/last-applied-configuration"
)

type model struct {
	ID                   types.String        `tfsdk:"id"`
	Name                 types.String        `tfsdk:"name"`
	Provisioner          types.String        `tfsdk:"storage_provisioner"`
	Parameters           types.Map           `tfsdk:"parameters"`
	ReclaimPolicy        types.String        `tfsdk:"reclaim_policy"`
	VolumeBindingMode    types.String        `tfsdk:"volume_binding_mode"`
	AllowVolumeExpansion types.Bool          `tfsdk:"allow_volume_expansion"`
	MountOptions         types.List          `tfsdk:"mount_options"`
	AllowedTopologies    []topologyTermModel `tfsdk:"allowed_topologies"`
	Labels               types.Map           `tfsdk:"labels"`
	Annotations          types.Map           `tfsdk:"annotations"`
	Default              types.Bool          `tfsdk:"default"`
}

type topologyTermModel struct {
	MatchLabelExpressions []labelExpressionModel `tfsdk:"match_label_expressions"`
}

type labelExpressionModel struct {
	Key    types.String `tfsdk:"key"`
	Values types.List   `tfsdk:"values"`
}

// spec is the validated, plain-Go form of the planned class.
type spec struct {
	Name                 string
	Provisioner          string
	Parameters           map[string]string
	ReclaimPolicy        corev1.PersistentVolumeReclaimPolicy
	VolumeBindingMode    storagev1.VolumeBindingMode
	AllowVolumeExpansion bool
	MountOptions         []string
	AllowedTopologies    []corev1.TopologySelectorTerm
	Labels               map[string]string
	Annotations          map[string]string
	Default              bool
}

func (m model) spec(ctx context.Context) (spec, diag.Diagnostics) {
	var diags diag.Diagnostics
	s := spec{
		Name:                 m.Name.ValueString(),
		Provisioner:          m.Provisioner.ValueString(),
		ReclaimPolicy:        corev1.PersistentVolumeReclaimPolicy(m.ReclaimPolicy.ValueString()),
		VolumeBindingMode:    storagev1.VolumeBindingMode(m.VolumeBindingMode.ValueString()),
		AllowVolumeExpansion: m.AllowVolumeExpansion.ValueBool(),
		Default:              m.Default.ValueBool(),
		Parameters:           tfconv.StringMap(ctx, m.Parameters, &diags),
		Labels:               tfconv.StringMap(ctx, m.Labels, &diags),
		Annotations:          tfconv.StringMap(ctx, m.Annotations, &diags),
		MountOptions:         tfconv.StringList(ctx, m.MountOptions, &diags),
	}
	for _, term := range m.AllowedTopologies {
		var t corev1.TopologySelectorTerm
		for _, e := range term.MatchLabelExpressions {
			t.MatchLabelExpressions = append(t.MatchLabelExpressions, corev1.TopologySelectorLabelRequirement{
				Key:    e.Key.ValueString(),
				Values: tfconv.StringList(ctx, e.Values, &diags),
			})
		}
		s.AllowedTopologies = append(s.AllowedTopologies, t)
	}
	return s, diags
}

// object renders the spec as a new StorageClass.
func (s spec) object() *storagev1.StorageClass {
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: s.Name}}
	s.applyTo(sc, nil, nil)
	return sc
}

// applyTo writes the spec onto a (possibly live) class. Labels and annotations the previous state
// managed but the spec no longer has are removed; keys nobody here managed are kept.
func (s spec) applyTo(sc *storagev1.StorageClass, prevLabels, prevAnnotations map[string]string) {
	sc.Provisioner = s.Provisioner
	sc.Parameters = s.Parameters
	sc.ReclaimPolicy = &s.ReclaimPolicy
	sc.VolumeBindingMode = &s.VolumeBindingMode
	sc.AllowVolumeExpansion = &s.AllowVolumeExpansion
	sc.MountOptions = s.MountOptions
	sc.AllowedTopologies = s.AllowedTopologies
	sc.Labels = tfconv.MergeManaged(sc.Labels, prevLabels, s.Labels)
	sc.Annotations = tfconv.MergeManaged(sc.Annotations, prevAnnotations, s.Annotations)
	if s.Default {
		if sc.Annotations == nil {
			sc.Annotations = map[string]string{}
		}
		sc.Annotations[defaultClassAnnotation] = "true"
		delete(sc.Annotations, betaDefaultClassAnnotation)
	} else if isMarkedDefault(sc) {
		delete(sc.Annotations, defaultClassAnnotation)
		delete(sc.Annotations, betaDefaultClassAnnotation)
	}
}

// isMarkedDefault reports whether a class carries the default-class annotation (GA or beta).
func isMarkedDefault(sc *storagev1.StorageClass) bool { return kube.IsDefaultClass(sc) }

// observed writes what the cluster says into the model. Labels and annotations are filtered to
// the keys the model already manages unless all is set (import), so keys added by other tools
// cause no diff. isDefault is decided by the caller, which knows about the other classes.
func (m *model) observed(sc *storagev1.StorageClass, isDefault, all bool) {
	m.ID = types.StringValue(sc.Name)
	m.Name = types.StringValue(sc.Name)
	m.Provisioner = types.StringValue(sc.Provisioner)
	m.Parameters = tfconv.Map(sc.Parameters, m.Parameters, true)
	m.ReclaimPolicy = types.StringValue(string(defaultReclaimPolicy))
	if sc.ReclaimPolicy != nil {
		m.ReclaimPolicy = types.StringValue(string(*sc.ReclaimPolicy))
	}
	m.VolumeBindingMode = types.StringValue(string(defaultVolumeBindingMode))
	if sc.VolumeBindingMode != nil {
		m.VolumeBindingMode = types.StringValue(string(*sc.VolumeBindingMode))
	}
	m.AllowVolumeExpansion = types.BoolValue(sc.AllowVolumeExpansion != nil && *sc.AllowVolumeExpansion)
	m.MountOptions = tfconv.List(sc.MountOptions, m.MountOptions)
	m.AllowedTopologies = nil
	for _, term := range sc.AllowedTopologies {
		var t topologyTermModel
		for _, e := range term.MatchLabelExpressions {
			t.MatchLabelExpressions = append(t.MatchLabelExpressions, labelExpressionModel{
				Key:    types.StringValue(e.Key),
				Values: tfconv.List(e.Values, types.ListValueMust(types.StringType, nil)),
			})
		}
		m.AllowedTopologies = append(m.AllowedTopologies, t)
	}
	m.Labels = tfconv.Map(sc.Labels, m.Labels, all)
	annotations := maps.Clone(sc.Annotations)
	for _, k := range []string{defaultClassAnnotation, betaDefaultClassAnnotation, lastAppliedAnnotation, importmark.PendingAnnotation} {
		delete(annotations, k)
	}
	m.Annotations = tfconv.Map(annotations, m.Annotations, all)
	m.Default = types.BoolValue(isDefault)
}
