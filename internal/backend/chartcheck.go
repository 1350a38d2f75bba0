package backend

import (
	"fmt"
	"strings"

	chart "helm.sh/helm/v4/pkg/chart/v2"
)

// verifyChart checks the chart archive about to be installed against the value layout the
// provider writes for it (a range of engines.go's table): every subchart the layout lists is a
// dependency with the same condition (a subchart's own below it where the layout says so), and
// every value key of the layout is in the chart's values.yaml or, below a subchart's name, in
// that subchart's. It returns one line per difference; none when the chart has the layout.
//
// Helm ignores a value no template reads, so a chart that moved a key would otherwise install
// with the setting silently dropped (an engine meant to be off installed, a data path not used).
func verifyChart(ch *chart.Chart, r chartRange) []string {
	var problems []string
	for _, d := range r.Dependencies {
		cond, ok := chartDependency(ch, d.Path)
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("no subchart %s in Chart.yaml's dependencies", d.Path))
		case cond != d.Condition:
			problems = append(problems, fmt.Sprintf("subchart %s has the condition %s, the layout %s", d.Path, conditionText(cond), conditionText(d.Condition)))
		}
	}
	for _, k := range r.Keys {
		if k.Key == "" {
			continue
		}
		if _, ok := chartValue(ch, k.Key); !ok {
			problems = append(problems, "no value "+k.Key+" in values.yaml")
		}
	}
	return problems
}

func conditionText(c string) string {
	if c == "" {
		return "none (always installed)"
	}
	return "`" + c + "`"
}

// chartDependency returns the condition of the dependency at path ("subchart" or
// "subchart/subchart") as the chart's Chart.yaml (or its subchart's) declares it.
func chartDependency(ch *chart.Chart, path string) (string, bool) {
	head, rest, nested := strings.Cut(path, "/")
	if nested {
		for _, sub := range ch.Dependencies() {
			if sub.Name() == head {
				return chartDependency(sub, rest)
			}
		}
		return "", false
	}
	for _, d := range ch.Metadata.Dependencies {
		if d.Name == head {
			return d.Condition, true
		}
	}
	return "", false
}

// chartValue returns the default of a dotted value key as an install sees it: the chart's own
// values first, then, for a key below a subchart's name, that subchart's.
func chartValue(ch *chart.Chart, key string) (any, bool) {
	if v, ok := lookupPath(ch.Values, key); ok {
		return v, true
	}
	head, rest, ok := strings.Cut(key, ".")
	if !ok {
		return nil, false
	}
	for _, sub := range ch.Dependencies() {
		if sub.Name() == head {
			return chartValue(sub, rest)
		}
	}
	return nil, false
}

// layoutError is a chart archive without the value layout the provider writes for its version.
type layoutError struct {
	Engine   engine
	Version  string
	Range    chartRange
	Verified bool
	Problems []string
}

func (e *layoutError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "The %s chart %s does not have the value layout the provider writes for it (that of %s %s.x, verified at %s):\n",
		e.Engine.Name, e.Version, e.Engine.Name, e.Range.Minor, e.Range.Newest)
	for _, p := range e.Problems {
		b.WriteString("  - " + p + "\n")
	}
	b.WriteString("Nothing was installed: Helm ignores values a chart does not read, so a typed setting would silently have no effect. ")
	if e.Verified {
		b.WriteString("The chart differs from the real release of that version: check repository and chart (a fork or a mirror that changed the chart?).")
	} else {
		fmt.Fprintf(&b, "Choose a version the provider's table verifies (%s; default %s), or one whose chart keeps that layout.", e.Engine.supportedText(), e.Engine.Version)
	}
	return b.String()
}
