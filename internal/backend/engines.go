package backend

import (
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/catalog"
)

// Backend types, the names the capacity data source reads them by.
const (
	typeLonghorn = catalog.BackendLonghorn
	typeOpenEBS  = catalog.BackendOpenEBS
)

// engine is what the resource knows about one backend type: where its chart comes from by
// default and, per range of chart versions, the value keys the provider writes and reads.
type engine struct {
	Name        string
	Repository  string
	Chart       string
	Namespace   string
	ReleaseName string
	// Ranges lists the supported chart versions, oldest first, one minor each.
	Ranges []chartRange
	// Version is the pinned default chart version: the newest verified patch of the last range.
	Version string
	// Upgrades is which version changes the chart makes in one upgrade.
	Upgrades upgradePolicy
	// LayoutOnly are minors no real chart of which could be read, whose layout is known from
	// another source (Source says which): their versions are installed with it, unverified, once
	// the archive passes the chart check (checkArchive), instead of with the nearest verified
	// range's layout below them. They are not supported versions of the table.
	LayoutOnly []chartRange
}

// upgradePolicy is which version changes an engine's chart makes in one upgrade, as its
// project documents and enforces them.
type upgradePolicy struct {
	// NoDowngrade: a version lower than the installed one is refused.
	NoDowngrade bool
	// OneMinorAtATime: from minor N only to N+1 (within a major version).
	OneMinorAtATime bool
	// RefusedBy names what refuses the change in the engine itself, for the error.
	RefusedBy string
}

// chartRange is one minor version of a chart (every patch release of it) and its value layout,
// as read from the real chart's Chart.yaml and values.yaml at its release tags.
type chartRange struct {
	// Minor is "1.9": the range is >= 1.9.0-0, < 1.10.0-0.
	Minor string
	// Newest is the newest patch release verified against the real chart.
	Newest string
	// KubeVersion is the chart's kubeVersion constraint ("" when it has none).
	KubeVersion string
	// Dependencies are the chart's subcharts with the value that turns each on ("" when always
	// installed). A subchart's own subchart is "<subchart>/<name>", its condition relative to
	// the subchart's values.
	Dependencies []dependency
	// Keys are every value key the provider writes or reads in this range.
	Keys []valueKey
	// Source is, for a LayoutOnly range, where its layout was read (Newest is then empty).
	Source string
}

// verifiedText says how the range's layout is known, for messages.
func (r chartRange) verifiedText() string {
	if r.Source != "" {
		return "read from " + r.Source + ", not verified against its chart"
	}
	return "verified at " + r.Newest
}

type dependency struct {
	Path      string
	Condition string
}

// valueKey is one value key of a chart and the typed setting it carries.
type valueKey struct {
	// Setting is the attribute (of the engine's block) the key carries; "" for a key only the
	// provider itself reads or writes.
	Setting string
	// Key is the dotted value path; "" when the range has nothing for Setting (Missing says
	// why, and a non-default setting is refused).
	Key string
	// Default is the chart's default (nil: unset, the application's own default applies).
	Default any
	// AsString: the chart wants the value as a string (Longhorn settings).
	AsString bool
	// Missing explains, for Key == "", what the range has instead.
	Missing string
	// Condition: the key is a dependency condition of the chart (it installs a subchart).
	Condition bool
}

var engines = map[string]engine{
	typeLonghorn: {
		Name:        typeLonghorn,
		Repository:  "https://charts.longhorn.io",
		Chart:       "longhorn",
		Namespace:   "longhorn-system",
		ReleaseName: "longhorn",
		Upgrades: upgradePolicy{NoDowngrade: true, OneMinorAtATime: true,
			RefusedBy: "its pre-upgrade check (longhorn-manager's upgrade path check)"},
		Ranges: []chartRange{
			{Minor: "1.7", Newest: "1.7.3", KubeVersion: ">=1.21.0-0", Keys: longhornKeys},
			{Minor: "1.8", Newest: "1.8.2", KubeVersion: ">=1.25.0-0", Keys: longhornKeys},
			{Minor: "1.9", Newest: "1.9.2", KubeVersion: ">=1.25.0-0", Keys: longhornKeys},
			{Minor: "1.10", Newest: "1.10.2", KubeVersion: ">=1.25.0-0", Keys: longhornKeys},
			{Minor: "1.11", Newest: "1.11.3", KubeVersion: ">=1.25.0-0", Keys: longhornKeys},
			{Minor: "1.12", Newest: "1.12.1", KubeVersion: ">=1.25.0-0", Keys: longhornKeys},
		},
	},
	typeOpenEBS: {
		Name:        typeOpenEBS,
		Repository:  "https://openebs.github.io/openebs",
		Chart:       "openebs",
		Namespace:   "openebs",
		ReleaseName: "openebs",
		// OpenEBS 4.x upgrades by `helm upgrade` of the umbrella chart, Mayastor's data plane
		// then by its upgrade job. Read in openebs/mayastor-extensions (default branch,
		// 2024-10): k8s/upgrade/src/bin/upgrade-job/helm/upgrade.rs refuses a target chart
		// lower than the installed one (RollbackForbidden: "rollbacks not supported"), then
		// only installed versions listed in k8s/upgrade/config/unsupported_versions.yaml (a
		// placeholder 0.0.0 there); the kubectl plugin's preflight
		// (k8s/upgrade/src/plugin/preflight_validations.rs) likewise refuses a higher-to-lower
		// semver upgrade. Mayastor's docs say upgrades are supported from source 2.0.0 on, to any
		// later version. Nothing limits how many minors one upgrade skips, so within 4.x any
		// upgrade is allowed and only downgrades are refused. (OpenEBS 3.x to 4.x is a migration
		// of its own, outside the table.)
		Upgrades: upgradePolicy{NoDowngrade: true,
			RefusedBy: "Mayastor's upgrade job (RollbackForbidden) and the OpenEBS kubectl plugin"},
		Ranges: []chartRange{
			{Minor: "4.0", Newest: "4.0.1", Dependencies: openebsDeps40, Keys: openebsKeys40},
			{Minor: "4.1", Newest: "4.1.3", Dependencies: openebsDeps40, Keys: openebsKeys40},
			{Minor: "4.2", Newest: "4.2.0", Dependencies: openebsDeps40, Keys: openebsKeys40},
			// No 4.3 chart could be read to verify its keys: 4.3.x has its own layout (LayoutOnly),
			// 4.5 and later are installed with 4.4's once their archive is checked (layoutFor,
			// checkArchive).
			{Minor: "4.4", Newest: "4.4.0", Dependencies: openebsDeps44, Keys: openebsKeys44},
		},
		LayoutOnly: []chartRange{
			{Minor: "4.3", Dependencies: openebsDeps43, Keys: openebsKeys44, Source: "OpenEBS's 4.3.x documentation"},
		},
	},
}

// Typed settings (attribute names in the engine's block).
const (
	settingReplicas     = "default_replica_count"
	settingLocality     = "default_data_locality"
	settingDataPath     = "default_data_path"
	settingDefaultClass = "default_class"
	settingUI           = "ui_enabled"

	settingMayastor        = "mayastor_enabled"
	settingLVM             = "lvm_enabled"
	settingZFS             = "zfs_enabled"
	settingLoki            = "loki_enabled"
	settingAlloy           = "alloy_enabled"
	settingHostpathBase    = "hostpath_base_path"
	settingHostpathName    = "hostpath_class_name"
	settingHostpathDefault = "hostpath_default_class"
	settingSnapshotCRDs    = "volume_snapshot_crds"
)

// Keys the provider uses without a typed setting.
const (
	keyLonghornDeletingFlag  = "defaultSettings.deletingConfirmationFlag"
	keySnapshotCRDs          = "openebs-crds.csi.volumeSnapshots.enabled"
	keyMayastorEtcdReplicas  = "mayastor.etcd.replicaCount"
	keyMayastorClassSuffix   = "mayastor.storageClass.nameSuffix"
	keyLonghornClassReplicas = "persistence.defaultClassReplicaCount"
	keyLonghornClassLocality = "persistence.defaultDataLocality"
	keyLonghornDefaultClass  = "persistence.defaultClass"
	keyHostpathClassName     = "localpv-provisioner.hostpathClass.name"
	keyHostpathDefault       = "localpv-provisioner.hostpathClass.isDefaultClass"
)

// longhornKeys is the same in every Longhorn chart from 1.7.0 to 1.12.1 (values.yaml read at each
// tag). Settings under `defaultSettings` are null by default (Longhorn's own default applies) and
// are passed as strings, which 1.10 and later quote into the longhorn-default-setting ConfigMap.
var longhornKeys = []valueKey{
	{Setting: settingReplicas, Key: keyLonghornClassReplicas, Default: 3},
	{Setting: settingReplicas, Key: "defaultSettings.defaultReplicaCount", AsString: true},
	{Setting: settingLocality, Key: keyLonghornClassLocality, Default: "disabled"},
	{Setting: settingLocality, Key: "defaultSettings.defaultDataLocality", AsString: true},
	{Setting: settingDataPath, Key: "defaultSettings.defaultDataPath", AsString: true},
	{Setting: settingDefaultClass, Key: keyLonghornDefaultClass, Default: true},
	{Setting: settingUI, Key: "longhornUI.replicas", Default: 2},
	{Key: keyLonghornDeletingFlag, AsString: true},
}

// OpenEBS 4.0.0 to 4.2.0: the engines' dependency conditions are `engines.*.enabled` (4.0.x
// values.yaml also carry `mayastor.enabled`, `lvm-localpv.enabled`, `zfs-localpv.enabled`, which
// no condition reads). There is no loki or alloy subchart: the logging is Mayastor's own
// `loki-stack` subchart (mayastor-extensions 2.6/2.7 Chart.yaml: condition `loki-stack.enabled`,
// on by default; 2.8.0 in 4.2.0 lists the loki and promtail images of the same stack).
var openebsDeps40 = []dependency{
	{Path: "openebs-crds"},
	{Path: "localpv-provisioner"},
	{Path: "zfs-localpv", Condition: "engines.local.zfs.enabled"},
	{Path: "lvm-localpv", Condition: "engines.local.lvm.enabled"},
	{Path: "mayastor", Condition: "engines.replicated.mayastor.enabled"},
	{Path: "mayastor/loki-stack", Condition: "loki-stack.enabled"},
}

var openebsKeys40 = append([]valueKey{
	{Setting: settingLoki, Key: "mayastor.loki-stack.enabled", Default: true},
	{Setting: settingAlloy, Missing: "openebs charts 4.0.x to 4.2.x have no Alloy: their only log collector is the promtail of Mayastor's loki-stack (loki_enabled)"},
}, openebsCommonKeys...)

// OpenEBS 4.4.0: loki and alloy are subcharts of the umbrella chart (on by default), rawfile
// LocalPV is a new engine (off by default; no typed setting), and Mayastor's own loki and
// alloy are turned off by the umbrella's values.
var openebsDeps44 = []dependency{
	{Path: "openebs-crds"},
	{Path: "loki", Condition: "loki.enabled"},
	{Path: "alloy", Condition: "alloy.enabled"},
	{Path: "localpv-provisioner"},
	{Path: "zfs-localpv", Condition: "engines.local.zfs.enabled"},
	{Path: "lvm-localpv", Condition: "engines.local.lvm.enabled"},
	{Path: "rawfile-localpv", Condition: "engines.local.rawfile.enabled"},
	{Path: "mayastor", Condition: "engines.replicated.mayastor.enabled"},
	{Path: "mayastor/loki", Condition: "loki.enabled"},
	{Path: "mayastor/alloy", Condition: "alloy.enabled"},
}

// OpenEBS 4.3.x: no 4.3 chart could be read (the readable openebs/openebs ends at 4.2.0), so
// its layout comes from OpenEBS's own documentation for 4.3.x (openebs/website,
// docs/versioned_docs/version-4.3.x): its OpenShift guide (revised 2025-09, when 4.3.x was the
// current release) lists a default install with the pods openebs-loki-0..2, openebs-minio-0..2
// and an openebs-alloy DaemonSet and the service accounts loki, minio-sa and openebs-alloy:
// 4.4's umbrella-level Loki (with MinIO) and Alloy, on by default, not 4.2's loki-stack
// (openebs-loki-0 and promtail, which the same guide showed at 4.3.0's docs release and its
// installation page still shows for 4.2.x, 4.3.x and 4.4.x alike). Rawfile LocalPV is first
// listed in the 4.4.x release notes (0.13.1, experimental) and nowhere in 4.3.x's: 4.3 is 4.4's
// layout without it. Mayastor 2.9 (4.3.2's release notes) is taken to have 2.10's loki/alloy.
var openebsDeps43 = dependenciesWithout(openebsDeps44, "rawfile-localpv")

// dependenciesWithout returns deps without the dependency at path, in the same order.
func dependenciesWithout(deps []dependency, path string) []dependency {
	out := make([]dependency, 0, len(deps))
	for _, d := range deps {
		if d.Path != path {
			out = append(out, d)
		}
	}
	return out
}

var openebsKeys44 = append([]valueKey{
	{Setting: settingLoki, Key: "loki.enabled", Default: true, Condition: true},
	{Setting: settingAlloy, Key: "alloy.enabled", Default: true, Condition: true},
}, openebsCommonKeys...)

// openebsCommonKeys are the same from 4.0.0 to 4.4.0. The hostpath class keys belong to the
// localpv-provisioner subchart (its values.yaml at 4.0.0 and 4.4.0); the etcd replica count and
// class suffix to the mayastor subchart (mayastor-extensions 2.6/2.7 values.yaml: etcd
// replicaCount 3 with a hard pod anti-affinity, class `<release>-single-replica`).
var openebsCommonKeys = []valueKey{
	{Setting: settingMayastor, Key: "engines.replicated.mayastor.enabled", Default: true, Condition: true},
	{Setting: settingLVM, Key: "engines.local.lvm.enabled", Default: true, Condition: true},
	{Setting: settingZFS, Key: "engines.local.zfs.enabled", Default: true, Condition: true},
	{Setting: settingHostpathBase, Key: "localpv-provisioner.hostpathClass.basePath", Default: ""},
	{Setting: settingHostpathName, Key: keyHostpathClassName, Default: defaultHostpathClassName},
	{Setting: settingHostpathDefault, Key: keyHostpathDefault, Default: false},
	{Setting: settingSnapshotCRDs, Key: keySnapshotCRDs, Default: true},
	{Key: keyMayastorEtcdReplicas, Default: 3},
	{Key: keyMayastorClassSuffix, Default: "single-replica"},
}

// constraint is the semver range of the minor.
func (r chartRange) constraint() string {
	v := semver.MustParse(r.Minor + ".0")
	return fmt.Sprintf(">= %s.0-0, < %d.%d.0-0", r.Minor, v.Major(), v.Minor()+1)
}

// keysFor returns the range's keys for a typed setting ("" for the provider's own keys).
func (r chartRange) keysFor(setting string) []valueKey {
	var out []valueKey
	for _, k := range r.Keys {
		if k.Setting == setting {
			out = append(out, k)
		}
	}
	return out
}

// key returns the range's key with that path.
func (r chartRange) key(path string) (valueKey, bool) {
	for _, k := range r.Keys {
		if k.Key == path {
			return k, true
		}
	}
	return valueKey{}, false
}

func init() {
	for name, e := range engines {
		e.Version = e.Ranges[len(e.Ranges)-1].Newest
		engines[name] = e
	}
}

// supportedText says which versions of the engine's chart are supported.
func (e engine) supportedText() string {
	parts := make([]string, 0, len(e.Ranges))
	for _, r := range e.Ranges {
		parts = append(parts, r.Minor+".x")
	}
	return strings.Join(parts, ", ")
}

// rangeFor returns the range whose value layout a chart version is installed with (layoutFor),
// or an error that names the supported versions.
func (e engine) rangeFor(version string) (chartRange, error) {
	r, _, err := e.layoutFor(version)
	return r, err
}

// layoutFor returns the range whose value layout a chart version is installed with: the range
// the version falls in (verified), or, for a minor the table does not list within a major it
// does, newer than the major's oldest listed minor, the nearest listed range below it (not
// verified: prepare checks the chart archive against that layout before anything is installed,
// verifyChart). Older minors and other majors are refused.
func (e engine) layoutFor(version string) (r chartRange, verified bool, err error) {
	v, err := semver.NewVersion(version)
	if err != nil {
		return chartRange{}, false, fmt.Errorf("%s chart version %q is not a semantic version", e.Name, version)
	}
	for _, r := range e.LayoutOnly {
		if c, err := semver.NewConstraint(r.constraint()); err == nil && c.Check(v) && v.Prerelease() == "" {
			return r, false, nil
		}
	}
	var below *chartRange
	for i, r := range e.Ranges {
		c, err := semver.NewConstraint(r.constraint())
		if err != nil {
			return chartRange{}, false, err
		}
		if c.Check(v) {
			return r, true, nil
		}
		if m := semver.MustParse(r.Minor + ".0"); m.Major() == v.Major() && m.LessThan(v) {
			below = &e.Ranges[i]
		}
	}
	if below != nil && v.Prerelease() == "" {
		return *below, false, nil
	}
	return chartRange{}, false, fmt.Errorf("%s chart version %s is not supported: the provider maps its typed settings onto the value keys of %s charts %s, "+
		"each checked against the real chart, and of later releases of the same major version whose chart has one of those layouts (checked at install). "+
		"Choose a supported version (default: %s)", e.Name, version, e.Name, e.supportedText(), e.Version)
}

// unverifiedText says, for a version the table does not list, which layout it is installed with.
func (e engine) unverifiedText(version string, r chartRange) string {
	return fmt.Sprintf("%s chart %s is newer than the %s charts the provider's value keys were verified against (%s). "+
		"It is installed with the value layout of %s.x (%s) once its Chart.yaml and values.yaml, read from the chart archive, "+
		"have every value key and subchart condition the provider writes and, rendered with the planned values, it installs what they turn on and nothing they turn off; "+
		"a chart that does not is refused before anything is installed.",
		e.Name, version, e.Name, e.supportedText(), r.Minor, r.verifiedText())
}

// upgradeCheck refuses a version change the chart cannot make in one upgrade (the engine's
// upgradePolicy): a downgrade, or a skip over a minor for an engine that upgrades one minor at a
// time (the error spells out the path, one apply per step, through the newest patch of each
// minor in between).
func (e engine) upgradeCheck(from, to string) error {
	p := e.Upgrades
	if from == "" || (!p.NoDowngrade && !p.OneMinorAtATime) {
		return nil
	}
	vf, err := semver.NewVersion(from)
	if err != nil {
		return nil //nolint:nilerr // an unreadable installed version: leave the check to the chart
	}
	vt, err := semver.NewVersion(to)
	if err != nil {
		return nil //nolint:nilerr // reported by rangeFor
	}
	if p.NoDowngrade && vt.LessThan(vf) {
		return fmt.Errorf("%s chart %s is installed: downgrading to %s is not supported by %s (%s refuses it). "+
			"Keep version %s or newer; going back needs a reinstall (destroy, which needs every volume of the backend gone first, then create)",
			e.Name, from, to, e.Name, p.RefusedBy, from)
	}
	if !p.OneMinorAtATime || vt.Major() != vf.Major() || vt.Minor() <= vf.Minor()+1 {
		return nil
	}
	path := []string{from}
	for _, r := range e.Ranges {
		m := semver.MustParse(r.Minor + ".0")
		if m.Major() == vf.Major() && m.Minor() > vf.Minor() && m.Minor() < vt.Minor() {
			path = append(path, r.Newest)
		}
	}
	path = append(path, to)
	return fmt.Errorf("%s chart %s is installed: %s upgrades only from one minor version to the next, so %s cannot be reached in one step. "+
		"Upgrade along %s, one apply per step (set version to each in turn and apply), waiting for every step to be healthy",
		e.Name, from, e.Name, to, strings.Join(path, " -> "))
}

// isExactVersion reports whether v names one version rather than a constraint.
func isExactVersion(v string) bool {
	_, err := semver.StrictNewVersion(strings.TrimPrefix(v, "v"))
	return err == nil
}

// satisfies reports whether version matches constraint (an exact version or a range).
func satisfies(version, constraint string) bool {
	if constraint == "" {
		return true
	}
	v, err := semver.NewVersion(version)
	if err != nil {
		return version == constraint
	}
	c, err := semver.NewConstraint(constraint)
	if err != nil {
		return version == constraint
	}
	return c.Check(v)
}

// typedValues maps typed settings onto the keys of a range: value returns a setting's value and
// whether to write it. A setting the range has no key for is refused unless it is off.
func typedValues(e engine, r chartRange, chartVersion string, block string, value func(setting string) (any, bool)) (map[string]any, error) {
	out := map[string]any{}
	for _, k := range r.Keys {
		if k.Setting == "" {
			continue
		}
		v, write := value(k.Setting)
		if !write {
			continue
		}
		if k.Key == "" {
			if v == false {
				continue // off, and the version has nothing to turn off
			}
			return nil, &settingError{Block: block, Setting: k.Setting, Msg: fmt.Sprintf("%s chart %s: %s", e.Name, chartVersion, k.Missing)}
		}
		if k.AsString {
			v = fmt.Sprint(v)
		}
		out[k.Key] = v
	}
	return out, nil
}

// settingError is a typed setting the chart version in use cannot carry.
type settingError struct {
	Block, Setting, Msg string
}

func (e *settingError) Error() string { return e.Block + "." + e.Setting + ": " + e.Msg }

// lookupPath walks a dotted value path ("a.b.c") in a values tree.
func lookupPath(values map[string]any, key string) (any, bool) {
	cur := values
	parts := strings.Split(key, ".")
	for i, p := range parts {
		v, ok := cur[p]
		if !ok {
			return nil, false
		}
		if i == len(parts)-1 {
			return v, true
		}
		next, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		cur = next
	}
	return nil, false
}

func lookupBool(values map[string]any, key string, def bool) bool {
	v, ok := lookupPath(values, key)
	if !ok {
		return def
	}
	switch t := v.(type) {
	case bool:
		return t
	case string:
		return t == "true"
	}
	return def
}

func lookupString(values map[string]any, key, def string) string {
	v, ok := lookupPath(values, key)
	if !ok || v == nil {
		return def
	}
	if s, ok := v.(string); ok {
		if s == "" {
			return def
		}
		return s
	}
	return fmt.Sprint(v)
}

func lookupInt(values map[string]any, key string, def int64) int64 {
	v, ok := lookupPath(values, key)
	if !ok || v == nil {
		return def
	}
	switch t := v.(type) {
	case float64:
		return int64(t)
	case int:
		return int64(t)
	case int64:
		return t
	case string:
		var n int64
		if _, err := fmt.Sscan(t, &n); err == nil {
			return n
		}
	}
	return def
}
