package helm

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	cutil "helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
)

// Rendered is a chart rendered offline with a set of values, as an install would render it.
type Rendered struct {
	// Objects are every object the templates render (hooks included; crds/ directories are
	// not templates and not here), each with the subchart whose template rendered it.
	Objects []RenderedObject
	// Subcharts are the chart's direct subcharts that the values turn on (their conditions
	// and tags, as Helm evaluates them), sorted.
	Subcharts []string
}

// RenderedObject is one rendered object and where it came from.
type RenderedObject struct {
	Object
	// Subchart is the path of the subchart whose template rendered the object: "" for the
	// chart itself, "mayastor", or "mayastor/loki" for a subchart's own subchart.
	Subchart string
	// Template is the template's path inside the chart archive.
	Template string
}

// Render renders ch with values (the user-supplied values, merged over the chart's defaults as
// an install merges them) for a release name in namespace, offline: no cluster is asked
// (`lookup` finds nothing, the capabilities are Helm's defaults). ch itself is not changed.
func Render(ctx context.Context, ch *chart.Chart, values map[string]any, name, namespace string) (*Rendered, error) {
	c := cloneChart(ch)
	vals := copyValues(values)
	if vals == nil {
		vals = map[string]any{}
	}
	if err := chartutil.ProcessDependencies(c, vals); err != nil {
		return nil, fmt.Errorf("evaluating the subcharts of chart %s %s: %w", ch.Name(), ch.Metadata.Version, err)
	}
	rv, err := cutil.ToRenderValues(c, vals, common.ReleaseOptions{Name: name, Namespace: namespace, IsInstall: true, Revision: 1}, nil)
	if err != nil {
		return nil, fmt.Errorf("merging the values of chart %s %s: %w", ch.Name(), ch.Metadata.Version, err)
	}
	files, err := new(engine.Engine).RenderWithContext(ctx, c, rv)
	if err != nil {
		return nil, fmt.Errorf("rendering chart %s %s: %w", ch.Name(), ch.Metadata.Version, err)
	}
	out := &Rendered{}
	for _, sub := range c.Dependencies() {
		out.Subcharts = append(out.Subcharts, sub.Name())
	}
	sort.Strings(out.Subcharts)
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if !strings.HasSuffix(p, ".yaml") && !strings.HasSuffix(p, ".yml") && !strings.HasSuffix(p, ".json") {
			continue // NOTES.txt, helpers
		}
		objs, err := ParseManifest(files[p])
		if err != nil {
			return nil, fmt.Errorf("chart %s %s: template %s: %w", ch.Name(), ch.Metadata.Version, p, err)
		}
		for _, o := range objs {
			out.Objects = append(out.Objects, RenderedObject{Object: o, Subchart: subchartOf(p), Template: p})
		}
	}
	return out, nil
}

// subchartOf returns the subchart path of a rendered template's path:
// "openebs/charts/mayastor/charts/loki/templates/x.yaml" is "mayastor/loki".
func subchartOf(template string) string {
	parts := strings.Split(template, "/")
	var subs []string
	for i := 1; i+1 < len(parts); i++ {
		if parts[i] == "templates" {
			break
		}
		if parts[i] == "charts" {
			subs = append(subs, parts[i+1])
			i++
		}
	}
	return strings.Join(subs, "/")
}

// cloneChart copies what ProcessDependencies and rendering change (metadata's dependency
// list, values, the subchart tree), so the chart handed to an install stays as it was loaded.
func cloneChart(ch *chart.Chart) *chart.Chart {
	c := *ch
	if ch.Metadata != nil {
		md := *ch.Metadata
		md.Dependencies = make([]*chart.Dependency, 0, len(ch.Metadata.Dependencies))
		for _, d := range ch.Metadata.Dependencies {
			dd := *d
			md.Dependencies = append(md.Dependencies, &dd)
		}
		c.Metadata = &md
	}
	c.Values = copyValues(ch.Values)
	subs := make([]*chart.Chart, 0, len(ch.Dependencies()))
	for _, s := range ch.Dependencies() {
		subs = append(subs, cloneChart(s))
	}
	c.SetDependencies(subs...)
	return &c
}
