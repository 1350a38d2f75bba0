package backend

import "fmt"

// openebsSettings are the typed settings of an OpenEBS install.
type openebsSettings struct {
	MayastorEnabled      bool
	LVMEnabled           bool
	ZFSEnabled           bool
	HostpathBasePath     string
	HostpathClassName    string
	HostpathDefaultClass bool
	LokiEnabled          bool
	AlloyEnabled         bool
}

const (
	defaultHostpathBasePath  = "/var/openebs/local"
	defaultHostpathClassName = "openebs-hostpath"
)

func defaultOpenEBSSettings() openebsSettings {
	return openebsSettings{HostpathBasePath: defaultHostpathBasePath, HostpathClassName: defaultHostpathClassName}
}

// Layouts of the openebs umbrella chart (indexes into engines[typeOpenEBS].Supported).
const (
	openebsLayout40 = 0 // 4.0.x: the subcharts' own `<subchart>.enabled` keys
	openebsLayout41 = 1 // 4.1 and later: `engines.<kind>.<engine>.enabled`, loki and alloy
)

// openebsKeys are the value keys of each setting in one chart layout.
type openebsKeys struct {
	Mayastor, LVM, ZFS []string
	Loki, Alloy        string // empty: the chart has no such add-on
}

var openebsLayouts = map[int]openebsKeys{
	// 4.0.x values also carry engines.*Enabled next to the subchart toggles; their role in 4.0 is
	// not documented, so both are set (harmless either way).
	openebsLayout40: {
		Mayastor: []string{"mayastor.enabled", "engines.replicated.mayastorEnabled"},
		LVM:      []string{"lvm-localpv.enabled", "engines.local.lvmEnabled"},
		ZFS:      []string{"zfs-localpv.enabled", "engines.local.zfsEnabled"},
	},
	openebsLayout41: {
		Mayastor: []string{"engines.replicated.mayastor.enabled"},
		LVM:      []string{"engines.local.lvm.enabled"},
		ZFS:      []string{"engines.local.zfs.enabled"},
		Loki:     "loki.enabled",
		Alloy:    "alloy.enabled",
	},
}

const (
	keyHostpathBasePath  = "localpv-provisioner.hostpathClass.basePath"
	keyHostpathClassName = "localpv-provisioner.hostpathClass.name"
	keyHostpathDefault   = "localpv-provisioner.hostpathClass.isDefaultClass"
)

// values maps the settings onto the value keys of the given chart version.
func (s openebsSettings) values(chartVersion string) (map[string]any, error) {
	layout, err := engines[typeOpenEBS].layout(chartVersion)
	if err != nil {
		return nil, err
	}
	keys := openebsLayouts[layout]
	out := map[string]any{
		keyHostpathBasePath:  s.HostpathBasePath,
		keyHostpathClassName: s.HostpathClassName,
		keyHostpathDefault:   s.HostpathDefaultClass,
	}
	for _, k := range keys.Mayastor {
		out[k] = s.MayastorEnabled
	}
	for _, k := range keys.LVM {
		out[k] = s.LVMEnabled
	}
	for _, k := range keys.ZFS {
		out[k] = s.ZFSEnabled
	}
	for _, addon := range []struct {
		key, name string
		on        bool
	}{{keys.Loki, "loki_enabled", s.LokiEnabled}, {keys.Alloy, "alloy_enabled", s.AlloyEnabled}} {
		switch {
		case addon.key != "":
			out[addon.key] = addon.on
		case addon.on:
			return nil, fmt.Errorf("openebs.%s: openebs chart %s has no such add-on (it arrived with the 4.1 layout)", addon.name, chartVersion)
		}
	}
	return out, nil
}

// openebsFromValues reads the settings back from a release's user-supplied values (import).
// Keys the release does not set keep the provider's defaults; the next plan then shows the
// difference as an update.
func openebsFromValues(chartVersion string, live map[string]any) openebsSettings {
	s := defaultOpenEBSSettings()
	layout, err := engines[typeOpenEBS].layout(chartVersion)
	if err != nil {
		return s
	}
	keys := openebsLayouts[layout]
	s.MayastorEnabled = lookupBool(live, keys.Mayastor[0], s.MayastorEnabled)
	s.LVMEnabled = lookupBool(live, keys.LVM[0], s.LVMEnabled)
	s.ZFSEnabled = lookupBool(live, keys.ZFS[0], s.ZFSEnabled)
	if keys.Loki != "" {
		s.LokiEnabled = lookupBool(live, keys.Loki, s.LokiEnabled)
		s.AlloyEnabled = lookupBool(live, keys.Alloy, s.AlloyEnabled)
	}
	s.HostpathBasePath = lookupString(live, keyHostpathBasePath, s.HostpathBasePath)
	s.HostpathClassName = lookupString(live, keyHostpathClassName, s.HostpathClassName)
	s.HostpathDefaultClass = lookupBool(live, keyHostpathDefault, s.HostpathDefaultClass)
	return s
}
