package backend

import "strconv"

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
	longhornClassName         = "longhorn"
	longhornDeletingFlag      = "deleting-confirmation-flag"
	keyLonghornDeletingFlag   = "defaultSettings.deletingConfirmationFlag"
	keyLonghornClassReplicas  = "persistence.defaultClassReplicaCount"
	keyLonghornClassLocality  = "persistence.defaultDataLocality"
	keyLonghornDefaultClass   = "persistence.defaultClass"
	keyLonghornReplicaSetting = "defaultSettings.defaultReplicaCount"
	keyLonghornLocalitySet    = "defaultSettings.defaultDataLocality"
	keyLonghornDataPath       = "defaultSettings.defaultDataPath"
	keyLonghornUIReplicas     = "longhornUI.replicas"
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

// values maps the settings onto the value keys of the given chart version (1.7.x and 1.8.x share
// them). Longhorn settings (`defaultSettings.*`) are passed as strings, which the newer charts
// require and the older ones accept.
func (s longhornSettings) values(chartVersion string) (map[string]any, error) {
	if _, err := engines[typeLonghorn].layout(chartVersion); err != nil {
		return nil, err
	}
	out := map[string]any{
		keyLonghornClassReplicas:  s.DefaultReplicaCount,
		keyLonghornReplicaSetting: strconv.FormatInt(s.DefaultReplicaCount, 10),
		keyLonghornClassLocality:  s.DefaultDataLocality,
		keyLonghornLocalitySet:    s.DefaultDataLocality,
		keyLonghornDataPath:       s.DefaultDataPath,
		keyLonghornDefaultClass:   s.DefaultClass,
	}
	if !s.UIEnabled {
		out[keyLonghornUIReplicas] = 0
	}
	return out, nil
}

// longhornFromValues reads the settings back from a release's user-supplied values (import).
func longhornFromValues(live map[string]any) longhornSettings {
	s := defaultLonghornSettings()
	s.DefaultReplicaCount = lookupInt(live, keyLonghornClassReplicas, s.DefaultReplicaCount)
	s.DefaultDataLocality = lookupString(live, keyLonghornClassLocality, s.DefaultDataLocality)
	s.DefaultDataPath = lookupString(live, keyLonghornDataPath, s.DefaultDataPath)
	s.DefaultClass = lookupBool(live, keyLonghornDefaultClass, s.DefaultClass)
	s.UIEnabled = lookupInt(live, keyLonghornUIReplicas, 1) != 0
	return s
}
