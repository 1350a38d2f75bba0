package backend

// Exports of engines.go's table for the external tests (fixtures_test.go, which needs acctest
// and so cannot be in this package).

// TableRange is one range of the table as the fixture test compares it.
type TableRange struct {
	KubeVersion string
	// Dependencies: "subchart" or "subchart/subchart" -> condition.
	Dependencies map[string]string
	// Defaults: value key -> the chart's default, for every key of the range.
	Defaults map[string]any
}

// TableRangeFor returns the range of the engine's table a version falls in.
func TableRangeFor(engineName, version string) (TableRange, error) {
	r, err := engines[engineName].rangeFor(version)
	if err != nil {
		return TableRange{}, err
	}
	out := TableRange{KubeVersion: r.KubeVersion, Dependencies: map[string]string{}, Defaults: map[string]any{}}
	for _, d := range r.Dependencies {
		out.Dependencies[d.Path] = d.Condition
	}
	for _, k := range r.Keys {
		if k.Key != "" {
			out.Defaults[k.Key] = k.Default
		}
	}
	return out, nil
}

// TableNewest returns, per engine, the newest verified patch of each range.
func TableNewest() map[string][]string {
	out := map[string][]string{}
	for name, e := range engines {
		for _, r := range e.Ranges {
			out[name] = append(out[name], r.Newest)
		}
	}
	return out
}

// LookupPath walks a dotted value path in a values tree.
var LookupPath = lookupPath
