package backend

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	chart "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/helm"
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
	fmt.Fprintf(&b, "The %s chart %s does not have the value layout the provider writes for it (that of %s %s.x, %s):\n",
		e.Engine.Name, e.Version, e.Engine.Name, e.Range.Minor, e.Range.verifiedText())
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

// enginePart is a subchart the provider knows as a part that runs pods: an engine (its CSI
// plugin) or an add-on (Loki, Alloy, the hostpath provisioner), keyed by its dependency path.
type enginePart struct {
	// Name is how the user knows it, for errors.
	Name string
	// CSIDriver is the driver the engine's plugin registers (guard.go's list); a CSIDriver
	// object the subchart renders must have that name. "" for a part that is no CSI driver.
	CSIDriver string
}

// engineParts are the subcharts whose workloads the render check accounts for: turned off,
// they render no Deployment, DaemonSet or StatefulSet; on, at least one (their plugin or
// provisioner). Dependencies of the table not listed here (openebs-crds; Mayastor's own
// loki and alloy in 4.3 and later, which the umbrella turns off) render what they render.
var engineParts = map[string]enginePart{
	"mayastor":            {Name: "Mayastor (replicated PV)", CSIDriver: "io.openebs.csi-mayastor"},
	"lvm-localpv":         {Name: "LocalPV LVM", CSIDriver: "local.csi.openebs.io"},
	"zfs-localpv":         {Name: "LocalPV ZFS", CSIDriver: "zfs.csi.openebs.io"},
	"rawfile-localpv":     {Name: "LocalPV rawfile", CSIDriver: "rawfile.csi.openebs.io"},
	"localpv-provisioner": {Name: "LocalPV hostpath provisioner"},
	"loki":                {Name: "Loki"},
	"alloy":               {Name: "Alloy"},
	"mayastor/loki-stack": {Name: "Mayastor's loki-stack (Loki and promtail)"},
}

// requiredWorkloads are workloads a chart without engine subcharts must render ("Kind/name"),
// by chart name: Longhorn's manager DaemonSet (it runs the engine and, through
// longhorn-driver-deployer, registers driver.longhorn.io at run time: the real chart renders
// no CSIDriver object).
var requiredWorkloads = map[string][]string{
	typeLonghorn: {"DaemonSet/longhorn-manager"},
}

// checkRendered renders the chart archive with the values about to be installed (offline,
// helm.Render) and returns one line per way the result is not what the values ask for:
//   - a direct subchart the values leave on that the layout does not list (a new add-on on by
//     default, e.g. OpenEBS 4.3's Loki, Alloy and MinIO under a 4.2 layout), named with the value
//     that turns it off;
//   - a part (engineParts) the values turn off that still renders a workload;
//   - a part the values turn on that renders none, or renders a CSIDriver of another name;
//   - a workload the chart must always render (requiredWorkloads) that it does not.
//
// A chart whose keys exist but are read by no template (verifyChart passes) fails here.
func checkRendered(ctx context.Context, ch *chart.Chart, r chartRange, values map[string]any, release, namespace string) ([]string, error) {
	out, err := helm.Render(ctx, ch, values, release, namespace)
	if err != nil {
		return nil, err
	}
	known := map[string]bool{}
	for _, d := range r.Dependencies {
		known[d.Path] = true
	}
	var problems []string
	for _, sub := range out.Subcharts {
		if known[sub] {
			continue
		}
		cond, _ := chartDependency(ch, sub)
		if cond == "" {
			problems = append(problems, fmt.Sprintf("subchart %s is always installed (it has no condition) and is not a part the provider knows for this layout", sub))
			continue
		}
		problems = append(problems, fmt.Sprintf("subchart %s is on (`%s` is true) and is not a part the provider knows for this layout: set `%s: false` in values to leave it out",
			sub, firstCondition(cond), firstCondition(cond)))
	}
	for _, d := range r.Dependencies {
		part, ok := engineParts[d.Path]
		if !ok {
			continue
		}
		key, on := conditionKey(d), true
		if key != "" {
			on = plannedBool(ch, values, key)
		}
		var workloads, drivers []string
		for _, o := range out.Objects {
			if o.Subchart != d.Path && !strings.HasPrefix(o.Subchart, d.Path+"/") {
				continue
			}
			switch {
			case isPodWorkload(o.Object):
				workloads = append(workloads, o.Kind+"/"+o.Name)
			case o.Kind == "CSIDriver" && o.Group() == "storage.k8s.io":
				drivers = append(drivers, o.Name)
			}
		}
		switch {
		case !on && len(workloads) > 0:
			problems = append(problems, fmt.Sprintf("%s (subchart %s) is turned off (`%s` = false) but the chart still renders its workloads %s",
				part.Name, d.Path, key, strings.Join(workloads, ", ")))
		case on && len(workloads) == 0:
			why := "it has no condition"
			if key != "" {
				why = "`" + key + "` = true"
			}
			problems = append(problems, fmt.Sprintf("%s (subchart %s) is turned on (%s) but the chart renders no Deployment, DaemonSet or StatefulSet of it", part.Name, d.Path, why))
		}
		for _, name := range drivers {
			if on && part.CSIDriver != "" && name != part.CSIDriver {
				problems = append(problems, fmt.Sprintf("%s (subchart %s) renders the CSI driver %s, not %s, whose volumes the provider's guards look for", part.Name, d.Path, name, part.CSIDriver))
			}
		}
	}
	for _, want := range requiredWorkloads[ch.Name()] {
		found := false
		for _, o := range out.Objects {
			if isPodWorkload(o.Object) && o.Kind+"/"+o.Name == want {
				found = true
			}
		}
		if !found {
			problems = append(problems, "the chart renders no "+want)
		}
	}
	return problems, nil
}

// conditionKey is a dependency's condition as a value path from the chart's root
// ("mayastor.loki-stack.enabled" for mayastor/loki-stack's `loki-stack.enabled`), "" for none.
func conditionKey(d dependency) string {
	if d.Condition == "" {
		return ""
	}
	parent, _, nested := strings.Cut(d.Path, "/")
	if !nested {
		return firstCondition(d.Condition)
	}
	return parent + "." + firstCondition(d.Condition)
}

// firstCondition is the first path of a condition (Helm reads the first one that is set).
func firstCondition(c string) string {
	first, _, _ := strings.Cut(c, ",")
	return strings.TrimSpace(first)
}

// plannedBool is a boolean value as the install sees it: the planned values, else the chart's
// default.
func plannedBool(ch *chart.Chart, values map[string]any, key string) bool {
	if v, ok := lookupPath(values, key); ok {
		if b, ok := v.(bool); ok {
			return b
		}
	}
	if v, ok := chartValue(ch, key); ok {
		if b, ok := v.(bool); ok {
			return b
		}
	}
	return false
}

func isPodWorkload(o helm.Object) bool {
	switch o.Group() + "/" + o.Kind {
	case "apps/Deployment", "apps/DaemonSet", "apps/StatefulSet":
		return true
	}
	return false
}

// renderError is a chart archive that, rendered with the planned values, is not what they ask.
type renderError struct {
	Engine   engine
	Version  string
	Problems []string
}

func (e *renderError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "The %s chart %s, rendered with the planned values, does not install what they ask for:\n", e.Engine.Name, e.Version)
	for _, p := range e.Problems {
		b.WriteString("  - " + p + "\n")
	}
	fmt.Fprintf(&b, "Nothing was installed. Change the values as said, or choose a version the provider's table verifies (%s; default %s).", e.Engine.supportedText(), e.Engine.Version)
	return b.String()
}

// checkArchive is the whole check of a chart archive against the values about to be installed
// with it: the layout (verifyChart), then the render (checkRendered). It returns the range whose
// layout the version is installed with, whether that range verifies the version, and the error
// to show (nil when the archive passes).
func checkArchive(ctx context.Context, ch *chart.Chart, e engine, values map[string]any, release, namespace string) (chartRange, bool, error) {
	r, verified, err := e.layoutFor(ch.Metadata.Version)
	if err != nil {
		return r, false, nil //nolint:nilerr // an unsupported version is refused by rangeFor, with its own message
	}
	if problems := verifyChart(ch, r); len(problems) > 0 {
		return r, verified, &layoutError{Engine: e, Version: ch.Metadata.Version, Range: r, Verified: verified, Problems: problems}
	}
	problems, err := checkRendered(ctx, ch, r, values, release, namespace)
	if err != nil {
		return r, verified, fmt.Errorf("the %s chart %s could not be rendered with the planned values: %w", e.Name, ch.Metadata.Version, err)
	}
	if len(problems) > 0 {
		return r, verified, &renderError{Engine: e, Version: ch.Metadata.Version, Problems: problems}
	}
	return r, verified, nil
}

// archiveDiags checks a chart archive (checkArchive) with the values about to be installed:
// an error naming what differs, or, for a version the table does not verify that passes, a
// warning saying which layout it was checked against.
func archiveDiags(ctx context.Context, ch *chart.Chart, s spec, values map[string]any) diag.Diagnostics {
	var diags diag.Diagnostics
	e := s.engine()
	r, verified, err := checkArchive(ctx, ch, e, values, s.ReleaseName, s.Namespace)
	var lerr *layoutError
	switch {
	case errors.As(err, &lerr):
		diags.AddAttributeError(path.Root("version"), "Chart "+s.Source.String()+" has another value layout", err.Error())
	case err != nil:
		diags.AddAttributeError(path.Root("version"), "Chart "+s.Source.String()+" does not render what the configuration asks for", err.Error())
	case !verified && r.Minor != "":
		diags.AddAttributeWarning(path.Root("version"), "Chart "+ch.Metadata.Version+" checked against the layout of "+r.Minor+".x",
			fmt.Sprintf("The %s chart %s is not among the versions the provider was verified against (%s). Its Chart.yaml and values.yaml have every "+
				"value key and subchart condition of %s.x's layout (%s), and rendered with the planned values it installs what they turn on and nothing they turn off.",
				e.Name, ch.Metadata.Version, e.supportedText(), r.Minor, r.verifiedText()))
	}
	return diags
}

// planChartCheck fetches the chart archive at plan (once per plan: archive, which the update
// guard reads too) and checks it with the planned values (archiveDiags), so a chart that would
// not install what the configuration asks for is refused before apply. When the archive cannot
// be fetched now (the repository or the cluster's connection is not reachable at plan), the
// apply checks it instead.
func (r *Resource) planChartCheck(ctx context.Context, s spec, version string, archive *planArchive) diag.Diagnostics {
	values, err := s.valuesFor(version)
	if err != nil {
		return nil // reported by the caller
	}
	hc, _, cdiags := r.clients(ctx)
	if cdiags.HasError() {
		tflog.Info(ctx, "chart check left to the apply: no Helm client at plan")
		return nil
	}
	src := s.Source
	src.Version = version
	ch, err := archive.chart(ctx, hc, src)
	if err != nil {
		tflog.Info(ctx, "chart check left to the apply: fetching the chart failed", map[string]any{"error": err.Error()})
		return nil
	}
	if ch.Metadata.Name != s.engine().Chart {
		return nil // refused by the apply with its own message
	}
	return archiveDiags(ctx, ch, s, values)
}
