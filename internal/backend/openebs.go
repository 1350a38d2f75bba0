package backend

import (
	"fmt"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/catalog"
)

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
	VolumeSnapshotCRDs   bool
}

const (
	defaultHostpathBasePath  = catalog.OpenEBSDefaultBasePath
	defaultHostpathClassName = "openebs-hostpath"
)

func defaultOpenEBSSettings() openebsSettings {
	return openebsSettings{HostpathBasePath: defaultHostpathBasePath, HostpathClassName: defaultHostpathClassName, VolumeSnapshotCRDs: true}
}

// value is the value of one typed setting and whether to write it.
func (s openebsSettings) value(setting string) (any, bool) {
	switch setting {
	case settingMayastor:
		return s.MayastorEnabled, true
	case settingLVM:
		return s.LVMEnabled, true
	case settingZFS:
		return s.ZFSEnabled, true
	case settingLoki:
		return s.LokiEnabled, true
	case settingAlloy:
		return s.AlloyEnabled, true
	case settingHostpathBase:
		return s.HostpathBasePath, true
	case settingHostpathName:
		return s.HostpathClassName, true
	case settingHostpathDefault:
		return s.HostpathDefaultClass, true
	case settingSnapshotCRDs:
		return s.VolumeSnapshotCRDs, true
	}
	return nil, false
}

// values maps the settings onto the value keys of the given chart version (engines.go's table).
func (s openebsSettings) values(chartVersion string) (map[string]any, error) {
	e := engines[typeOpenEBS]
	r, err := e.rangeFor(chartVersion)
	if err != nil {
		return nil, err
	}
	out, err := typedValues(e, r, chartVersion, "openebs", s.value)
	if err != nil {
		return nil, err
	}
	// Before 4.3, Loki is Mayastor's loki-stack subchart: without Mayastor there is none.
	if k := r.keysFor(settingLoki)[0]; !k.Condition && s.LokiEnabled && !s.MayastorEnabled {
		return nil, &settingError{Block: "openebs", Setting: settingLoki, Msg: fmt.Sprintf("openebs chart %s installs Loki only as part of Mayastor "+
			"(its loki-stack subchart, `%s`): set mayastor_enabled = true as well, or use chart 4.3 or later, whose Loki is its own subchart", chartVersion, k.Key)}
	}
	return out, nil
}

// openebsFromValues reads the settings back from a release's user-supplied values (import). A
// key the release does not set has the chart's default (engines.go's table): a release installed
// with the chart's defaults runs Mayastor, LVM and ZFS, and reads back so.
func openebsFromValues(chartVersion string, live map[string]any) openebsSettings {
	s := defaultOpenEBSSettings()
	r, err := engines[typeOpenEBS].rangeFor(chartVersion)
	if err != nil {
		return s
	}
	readBool := func(setting string, def bool) bool {
		k := r.keysFor(setting)[0]
		if k.Key == "" {
			return def
		}
		if chartDefault, ok := k.Default.(bool); ok {
			def = chartDefault
		}
		return lookupBool(live, k.Key, def)
	}
	readString := func(setting, def string) string {
		return lookupString(live, r.keysFor(setting)[0].Key, def)
	}
	s.MayastorEnabled = readBool(settingMayastor, s.MayastorEnabled)
	s.LVMEnabled = readBool(settingLVM, s.LVMEnabled)
	s.ZFSEnabled = readBool(settingZFS, s.ZFSEnabled)
	s.LokiEnabled = readBool(settingLoki, s.LokiEnabled)
	if !r.keysFor(settingLoki)[0].Condition {
		s.LokiEnabled = s.LokiEnabled && s.MayastorEnabled // Mayastor's loki-stack: only with Mayastor
	}
	s.AlloyEnabled = readBool(settingAlloy, s.AlloyEnabled)
	s.HostpathBasePath = readString(settingHostpathBase, s.HostpathBasePath)
	s.HostpathClassName = readString(settingHostpathName, s.HostpathClassName)
	s.HostpathDefaultClass = readBool(settingHostpathDefault, s.HostpathDefaultClass)
	s.VolumeSnapshotCRDs = readBool(settingSnapshotCRDs, s.VolumeSnapshotCRDs)
	return s
}
