package backend

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"helm.sh/helm/v4/pkg/registry"
	"sigs.k8s.io/yaml"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/helm"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/tfconv"
)

type model struct {
	ID                 types.String `tfsdk:"id"`
	Type               types.String `tfsdk:"type"`
	Repository         types.String `tfsdk:"repository"`
	Chart              types.String `tfsdk:"chart"`
	Version            types.String `tfsdk:"version"`
	Namespace          types.String `tfsdk:"namespace"`
	ReleaseName        types.String `tfsdk:"release_name"`
	CreateNamespace    types.Bool   `tfsdk:"create_namespace"`
	RepositoryUsername types.String `tfsdk:"repository_username"`
	RepositoryPassword types.String `tfsdk:"repository_password"`
	// RepositoryPasswordWO and SetWO are write-only: null in plan and state; readWriteOnly fills
	// them from the configuration.
	RepositoryPasswordWO types.String   `tfsdk:"repository_password_wo"`
	RepositoryCAFile     types.String   `tfsdk:"repository_ca_file"`
	RepositoryPlainHTTP  types.Bool     `tfsdk:"repository_plain_http"`
	RepositoryCertFile   types.String   `tfsdk:"repository_cert_file"`
	RepositoryKeyFile    types.String   `tfsdk:"repository_key_file"`
	RepositoryInsecure   types.Bool     `tfsdk:"repository_insecure_skip_verify"`
	OpenEBS              *openebsModel  `tfsdk:"openebs"`
	Longhorn             *longhornModel `tfsdk:"longhorn"`
	Values               types.List     `tfsdk:"values"`
	Set                  []setModel     `tfsdk:"set"`
	SetSensitive         []setModel     `tfsdk:"set_sensitive"`
	SetWO                []setModel     `tfsdk:"set_wo"`
	SetWORevision        types.Int64    `tfsdk:"set_wo_revision"`
	MaxHistory           types.Int64    `tfsdk:"max_history"`
	Wait                 types.Bool     `tfsdk:"wait"`
	ForceDestroy         types.Bool     `tfsdk:"force_destroy"`
	ForceStrandVolumes   types.Bool     `tfsdk:"force_strand_volumes"`
	Preflight            types.Bool     `tfsdk:"preflight"`
	Status               types.String   `tfsdk:"status"`
	Revision             types.Int64    `tfsdk:"revision"`
	ChartVersion         types.String   `tfsdk:"chart_version"`
	AppVersion           types.String   `tfsdk:"app_version"`
	StorageClasses       types.List     `tfsdk:"storage_classes"`
	Footprint            types.Object   `tfsdk:"footprint"`
	Timeouts             timeouts.Value `tfsdk:"timeouts"`
}

type openebsModel struct {
	MayastorEnabled      types.Bool   `tfsdk:"mayastor_enabled"`
	LVMEnabled           types.Bool   `tfsdk:"lvm_enabled"`
	ZFSEnabled           types.Bool   `tfsdk:"zfs_enabled"`
	LokiEnabled          types.Bool   `tfsdk:"loki_enabled"`
	AlloyEnabled         types.Bool   `tfsdk:"alloy_enabled"`
	HostpathBasePath     types.String `tfsdk:"hostpath_base_path"`
	HostpathClassName    types.String `tfsdk:"hostpath_class_name"`
	HostpathDefaultClass types.Bool   `tfsdk:"hostpath_default_class"`
	VolumeSnapshotCRDs   types.Bool   `tfsdk:"volume_snapshot_crds"`
}

type longhornModel struct {
	DefaultReplicaCount types.Int64  `tfsdk:"default_replica_count"`
	DefaultDataLocality types.String `tfsdk:"default_data_locality"`
	DefaultDataPath     types.String `tfsdk:"default_data_path"`
	DefaultClass        types.Bool   `tfsdk:"default_class"`
	UIEnabled           types.Bool   `tfsdk:"ui_enabled"`
}

type setModel struct {
	Name  types.String `tfsdk:"name"`
	Value types.String `tfsdk:"value"`
	Type  types.String `tfsdk:"type"`
}

// spec is the validated, plain-Go form of a planned backend.
type spec struct {
	Type            string
	Source          helm.Source
	Namespace       string
	ReleaseName     string
	CreateNamespace bool
	Wait            bool
	ForceDestroy    bool
	// ForceStrandVolumes lets an update go on that leaves volumes without their driver or data
	// path (strand.go).
	ForceStrandVolumes bool
	Preflight          bool
	OpenEBS            openebsSettings
	Longhorn           longhornSettings
	// Values are the raw YAML documents, merged in order; Sets the set entries, then the
	// set_sensitive ones.
	Values     []string
	Sets       []helm.Set
	MaxHistory int
}

// withDefaults fills the per-type defaults of attributes the configuration left out. A chart
// given as an oci:// reference or a local path has no repository.
func (m *model) withDefaults() {
	e, ok := engines[m.Type.ValueString()]
	if !ok {
		return
	}
	absent := func(v types.String) bool { return v.IsNull() || v.IsUnknown() }
	if absent(m.Chart) {
		m.Chart = types.StringValue(e.Chart)
	}
	if absent(m.Repository) {
		c := m.Chart.ValueString()
		if registry.IsOCI(c) || strings.ContainsAny(c, "/.") {
			m.Repository = types.StringValue("")
		} else {
			m.Repository = types.StringValue(e.Repository)
		}
	}
	if absent(m.Version) {
		m.Version = types.StringValue(e.Version)
	}
	if absent(m.Namespace) {
		m.Namespace = types.StringValue(e.Namespace)
	}
	if absent(m.ReleaseName) {
		m.ReleaseName = types.StringValue(e.ReleaseName)
	}
}

func (m model) spec() spec {
	s := spec{
		Type: m.Type.ValueString(),
		Source: helm.Source{
			Repository: m.Repository.ValueString(),
			Chart:      m.Chart.ValueString(),
			Version:    m.Version.ValueString(),
			Username:   m.RepositoryUsername.ValueString(),
			Password:   m.password(),
			CAFile:     m.RepositoryCAFile.ValueString(),
			CertFile:   m.RepositoryCertFile.ValueString(),
			KeyFile:    m.RepositoryKeyFile.ValueString(),
			Insecure:   m.RepositoryInsecure.ValueBool(),
			PlainHTTP:  m.RepositoryPlainHTTP.ValueBool(),
		},
		Namespace:          m.Namespace.ValueString(),
		ReleaseName:        m.ReleaseName.ValueString(),
		CreateNamespace:    m.CreateNamespace.IsNull() || m.CreateNamespace.ValueBool(),
		Wait:               m.Wait.IsNull() || m.Wait.ValueBool(),
		ForceDestroy:       m.ForceDestroy.ValueBool(),
		ForceStrandVolumes: m.ForceStrandVolumes.ValueBool(),
		Preflight:          m.Preflight.ValueBool(),
		OpenEBS:            defaultOpenEBSSettings(),
		Longhorn:           defaultLonghornSettings(),
		Values:             stringsOf(m.Values),
		MaxHistory:         defaultMaxHistory,
	}
	if !m.MaxHistory.IsNull() && !m.MaxHistory.IsUnknown() {
		s.MaxHistory = int(m.MaxHistory.ValueInt64())
	}
	if o := m.OpenEBS; o != nil {
		setBool(&s.OpenEBS.MayastorEnabled, o.MayastorEnabled)
		setBool(&s.OpenEBS.LVMEnabled, o.LVMEnabled)
		setBool(&s.OpenEBS.ZFSEnabled, o.ZFSEnabled)
		setBool(&s.OpenEBS.LokiEnabled, o.LokiEnabled)
		setBool(&s.OpenEBS.AlloyEnabled, o.AlloyEnabled)
		setBool(&s.OpenEBS.HostpathDefaultClass, o.HostpathDefaultClass)
		setBool(&s.OpenEBS.VolumeSnapshotCRDs, o.VolumeSnapshotCRDs)
		setString(&s.OpenEBS.HostpathBasePath, o.HostpathBasePath)
		setString(&s.OpenEBS.HostpathClassName, o.HostpathClassName)
	}
	if l := m.Longhorn; l != nil {
		if !l.DefaultReplicaCount.IsNull() && !l.DefaultReplicaCount.IsUnknown() {
			s.Longhorn.DefaultReplicaCount = l.DefaultReplicaCount.ValueInt64()
		}
		setString(&s.Longhorn.DefaultDataLocality, l.DefaultDataLocality)
		setString(&s.Longhorn.DefaultDataPath, l.DefaultDataPath)
		setBool(&s.Longhorn.DefaultClass, l.DefaultClass)
		setBool(&s.Longhorn.UIEnabled, l.UIEnabled)
	}
	for _, e := range m.Set {
		s.Sets = append(s.Sets, helm.Set{Name: e.Name.ValueString(), Value: e.Value.ValueString(), String: e.Type.ValueString() == "string"})
	}
	for _, e := range m.SetSensitive {
		s.Sets = append(s.Sets, helm.Set{Name: e.Name.ValueString(), Value: e.Value.ValueString(), String: e.Type.ValueString() == "string", Sensitive: true})
	}
	for _, e := range m.SetWO {
		s.Sets = append(s.Sets, helm.Set{Name: e.Name.ValueString(), Value: e.Value.ValueString(), String: e.Type.ValueString() == "string", Sensitive: true, Attribute: "set_wo"})
	}
	return s
}

// password is the repository password: the write-only one when the configuration gives it.
func (m model) password() string {
	if !m.RepositoryPasswordWO.IsNull() && !m.RepositoryPasswordWO.IsUnknown() {
		return m.RepositoryPasswordWO.ValueString()
	}
	return m.RepositoryPassword.ValueString()
}

// stringsOf returns the known elements of a list of strings (null and unknown elements are
// skipped: ModifyPlan checks values only once the whole list is known).
func stringsOf(l types.List) []string {
	var out []string
	for _, e := range l.Elements() {
		if s, ok := e.(types.String); ok && !s.IsNull() && !s.IsUnknown() {
			out = append(out, s.ValueString())
		}
	}
	return out
}

func setBool(dst *bool, v types.Bool) {
	if !v.IsNull() && !v.IsUnknown() {
		*dst = v.ValueBool()
	}
}

func setString(dst *string, v types.String) {
	if !v.IsNull() && !v.IsUnknown() {
		*dst = v.ValueString()
	}
}

func (s spec) engine() engine { return engines[s.Type] }

func (s spec) id() string { return s.Namespace + "/" + s.ReleaseName }

// typed maps the typed settings onto the value keys of chartVersion.
func (s spec) typed(chartVersion string) (map[string]any, error) {
	switch s.Type {
	case typeOpenEBS:
		return s.OpenEBS.values(chartVersion)
	case typeLonghorn:
		return s.Longhorn.values(chartVersion)
	}
	return nil, fmt.Errorf("unknown backend type %q", s.Type)
}

// valuesFor returns the values passed to Helm for chartVersion: typed settings, then the raw
// YAML, then the set entries. A raw value that contradicts a typed setting is an error.
func (s spec) valuesFor(chartVersion string) (map[string]any, error) {
	typed, err := s.typed(chartVersion)
	if err != nil {
		return nil, err
	}
	if err := s.contradictions(typed); err != nil {
		return nil, err
	}
	return helm.MergeValues(typed, s.Values, s.Sets)
}

func (s spec) contradictions(typed map[string]any) error {
	found, err := helm.Contradictions(typed, s.Values, s.Sets)
	if err != nil {
		return err
	}
	if len(found) == 0 {
		return nil
	}
	lines := make([]string, 0, len(found))
	for _, c := range found {
		lines = append(lines, "  - "+c.String())
	}
	source, _, _ := strings.Cut(found[0].Source, "[")
	return &contradictionError{lines: lines, source: source}
}

// contradictionError lists raw values that contradict typed settings; source is the attribute
// of the first one (values, set or set_sensitive).
type contradictionError struct {
	lines  []string
	source string
}

func (e *contradictionError) attribute() string { return e.source }

func (e *contradictionError) Error() string {
	return "raw values contradict the typed settings:\n" + strings.Join(e.lines, "\n") +
		"\nChange the typed setting instead, or remove the raw value."
}

// sameValues compares two values trees as Helm stores them (JSON), so 3 and 3.0 are equal.
// withoutUnsetDefaults is want without the keys of the table (keys) that live (a release's
// user-supplied values) does not set and that hold a default: what the typed settings render at
// their defaults (defaults), or the chart's default, which is what the release has. A release the helm CLI installed with
// the chart's defaults is imported with every typed setting read back, and the values those
// render are not drift: an upgrade to them would change nothing but the revision. Maps left
// empty go too. want itself is not changed.
func withoutUnsetDefaults(want, live, defaults map[string]any, keys []valueKey) map[string]any {
	out, _ := jsonNormal(want).(map[string]any)
	if out == nil {
		return want
	}
	pruned := false
	for _, k := range keys {
		if k.Key == "" {
			continue
		}
		def, ok := lookupPath(defaults, k.Key)
		if !ok {
			def = k.Default
		}
		if _, set := lookupPath(live, k.Key); set {
			continue
		}
		// Unset, the release has the chart's default (k.Default): wanting that is no drift
		// either, as after importing a release installed with the chart's defaults whose
		// default differs from the typed setting's (OpenEBS's engines, Mayastor's loki-stack).
		if v, ok := lookupPath(out, k.Key); ok && ((def != nil && fmt.Sprint(v) == fmt.Sprint(def)) ||
			(k.Default != nil && fmt.Sprint(v) == fmt.Sprint(k.Default))) {
			deletePath(out, strings.Split(k.Key, "."))
			pruned = true
		}
	}
	if !pruned {
		return want
	}
	return out
}

// deletePath removes the value at path from values, and each map on the way that it leaves empty.
func deletePath(values map[string]any, path []string) {
	if len(path) == 1 {
		delete(values, path[0])
		return
	}
	next, ok := values[path[0]].(map[string]any)
	if !ok {
		return
	}
	deletePath(next, path[1:])
	if len(next) == 0 {
		delete(values, path[0])
	}
}

func sameValues(a, b map[string]any) bool {
	return reflect.DeepEqual(jsonNormal(a), jsonNormal(b))
}

func jsonNormal(v map[string]any) any {
	if v == nil {
		v = map[string]any{}
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		return v
	}
	return out
}

// valuesDiff describes, briefly, which top-level keys differ between two values trees.
func valuesDiff(want, live map[string]any) string {
	w, _ := jsonNormal(want).(map[string]any)
	l, _ := jsonNormal(live).(map[string]any)
	var keys []string
	seen := map[string]bool{}
	for k := range w {
		seen[k] = true
		if !reflect.DeepEqual(w[k], l[k]) {
			keys = append(keys, k)
		}
	}
	for k := range l {
		if !seen[k] {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return ""
	}
	b, _ := yaml.Marshal(keys)
	return strings.TrimSpace(string(b))
}

// observed writes what the cluster says about the release into the model.
func (m *model) observed(st *helm.Status, fp *kube.Footprint, classes []string) {
	m.ID = types.StringValue(st.Namespace + "/" + st.Name)
	m.Namespace = types.StringValue(st.Namespace)
	m.ReleaseName = types.StringValue(st.Name)
	m.Status = types.StringValue(st.Status)
	m.Revision = types.Int64Value(int64(st.Revision))
	m.ChartVersion = types.StringValue(st.ChartVersion)
	m.AppVersion = types.StringValue(st.AppVersion)
	if classes == nil {
		classes = []string{}
	}
	m.StorageClasses = tfconv.List(classes, types.ListValueMust(types.StringType, nil))
	if fp != nil {
		m.Footprint = footprintValue(fp)
	} else if m.Footprint.IsUnknown() || m.Footprint.IsNull() {
		m.Footprint = types.ObjectNull(footprintAttrTypes)
	}
}

func footprintValue(fp *kube.Footprint) types.Object {
	usage := types.Int64Null()
	if fp.MemoryUsageKnown {
		usage = types.Int64Value(fp.MemoryUsageBytes)
	}
	return types.ObjectValueMust(footprintAttrTypes, map[string]attr.Value{
		"pods":                    types.Int64Value(int64(fp.Pods)),
		"containers":              types.Int64Value(int64(fp.Containers)),
		"cpu_requests_millicores": types.Int64Value(fp.CPURequestsMilli),
		"memory_requests_bytes":   types.Int64Value(fp.MemoryRequestsBytes),
		"memory_limits_bytes":     types.Int64Value(fp.MemoryLimitsBytes),
		"memory_usage_bytes":      usage,
	})
}

// adopt fills the configuration attributes of an imported release from what the cluster says:
// the type from the chart's name, the chart version, and the typed settings read back from the
// release's values (a block left null when every setting has its default).
func (m *model) adopt(st *helm.Status) error {
	var t string
	switch st.ChartName {
	case "longhorn":
		t = typeLonghorn
	case "openebs":
		t = typeOpenEBS
	default:
		return fmt.Errorf("release %s/%s installs chart %q, which is neither longhorn nor openebs", st.Namespace, st.Name, st.ChartName)
	}
	m.Type = types.StringValue(t)
	m.Chart, m.Repository = types.StringNull(), types.StringNull()
	m.Version = types.StringValue(st.ChartVersion)
	m.withDefaults()
	m.CreateNamespace = types.BoolValue(true)
	m.RepositoryPlainHTTP = types.BoolValue(false)
	m.RepositoryInsecure = types.BoolValue(false)
	m.MaxHistory = types.Int64Value(defaultMaxHistory)
	m.Wait = types.BoolValue(true)
	m.ForceDestroy = types.BoolValue(defaultForceDestroy)
	m.ForceStrandVolumes = types.BoolValue(defaultForceStrandVolumes)
	m.Preflight = types.BoolValue(false)
	m.Timeouts = timeouts.Value{Object: types.ObjectNull(map[string]attr.Type{
		"create": types.StringType, "update": types.StringType, "delete": types.StringType,
	})}
	switch t {
	case typeOpenEBS:
		s := openebsFromValues(st.ChartVersion, st.Values)
		if s != defaultOpenEBSSettings() {
			m.OpenEBS = &openebsModel{
				MayastorEnabled: types.BoolValue(s.MayastorEnabled), LVMEnabled: types.BoolValue(s.LVMEnabled),
				ZFSEnabled: types.BoolValue(s.ZFSEnabled), LokiEnabled: types.BoolValue(s.LokiEnabled),
				AlloyEnabled: types.BoolValue(s.AlloyEnabled), HostpathBasePath: types.StringValue(s.HostpathBasePath),
				HostpathClassName: types.StringValue(s.HostpathClassName), HostpathDefaultClass: types.BoolValue(s.HostpathDefaultClass),
				VolumeSnapshotCRDs: types.BoolValue(s.VolumeSnapshotCRDs),
			}
		}
	case typeLonghorn:
		s := longhornFromValues(st.ChartVersion, st.Values)
		if s != defaultLonghornSettings() {
			m.Longhorn = &longhornModel{
				DefaultReplicaCount: types.Int64Value(s.DefaultReplicaCount), DefaultDataLocality: types.StringValue(s.DefaultDataLocality),
				DefaultDataPath: types.StringValue(s.DefaultDataPath), DefaultClass: types.BoolValue(s.DefaultClass),
				UIEnabled: types.BoolValue(s.UIEnabled),
			}
		}
	}
	return nil
}
