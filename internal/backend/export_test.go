package backend

import chart "helm.sh/helm/v4/pkg/chart/v2"

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

// ChartValue is the default of a dotted value key as an install of the chart sees it.
var ChartValue = chartValue

// VerifyChart checks a chart against the layout its version is installed with (verifyChart):
// the layout's minor, whether the version is verified, and the differences.
func VerifyChart(engineName string, ch *chart.Chart) (minor string, verified bool, problems []string, err error) {
	r, verified, err := engines[engineName].layoutFor(ch.Metadata.Version)
	if err != nil {
		return "", false, nil, err
	}
	return r.Minor, verified, verifyChart(ch, r), nil
}
