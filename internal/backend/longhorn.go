package backend

// longhornSettings are the typed settings of a Longhorn install.
type longhornSettings struct {
	DefaultReplicaCount int64
	DefaultDataLocality string
	DefaultDataPath     string
	DefaultClass        bool
	UIEnabled           bool
}

const (
	defaultLonghornReplicas = 3
	defaultLonghornLocality = "disabled"
	defaultLonghornDataPath = "/var/lib/longhorn/"

	// The StorageClass Longhorn renders (from ConfigMap longhorn-storageclass) and the Setting
	// that guards its uninstall.
	longhornClassName    = "longhorn"
	longhornDeletingFlag = "deleting-confirmation-flag"
)

func defaultLonghornSettings() longhornSettings {
	return longhornSettings{
		DefaultReplicaCount: defaultLonghornReplicas,
		DefaultDataLocality: defaultLonghornLocality,
		DefaultDataPath:     defaultLonghornDataPath,
		DefaultClass:        true,
		UIEnabled:           true,
	}
}

// value is the value of one typed setting and whether to write it (the UI's replica count is
// written only to turn the UI off).
func (s longhornSettings) value(setting string) (any, bool) {
	switch setting {
	case settingReplicas:
		return s.DefaultReplicaCount, true
	case settingLocality:
		return s.DefaultDataLocality, true
	case settingDataPath:
		return s.DefaultDataPath, true
	case settingDefaultClass:
		return s.DefaultClass, true
	case settingUI:
		return 0, !s.UIEnabled
	}
	return nil, false
}

// values maps the settings onto the value keys of the given chart version (engines.go's table).
func (s longhornSettings) values(chartVersion string) (map[string]any, error) {
	e := engines[typeLonghorn]
	r, err := e.rangeFor(chartVersion)
	if err != nil {
		return nil, err
	}
	return typedValues(e, r, chartVersion, "longhorn", s.value)
}

// longhornFromValues reads the settings back from a release's user-supplied values (import),
// from the first key of each setting in the chart version's range.
func longhornFromValues(chartVersion string, live map[string]any) longhornSettings {
	s := defaultLonghornSettings()
	r, err := engines[typeLonghorn].rangeFor(chartVersion)
	if err != nil {
		return s
	}
	first := func(setting string) string { return r.keysFor(setting)[0].Key }
	s.DefaultReplicaCount = lookupInt(live, first(settingReplicas), s.DefaultReplicaCount)
	s.DefaultDataLocality = lookupString(live, first(settingLocality), s.DefaultDataLocality)
	s.DefaultDataPath = lookupString(live, first(settingDataPath), s.DefaultDataPath)
	s.DefaultClass = lookupBool(live, first(settingDefaultClass), s.DefaultClass)
	s.UIEnabled = lookupInt(live, first(settingUI), 1) != 0
	return s
}
