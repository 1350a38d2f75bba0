package comparison

import (
	"fmt"
	"sort"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/datasource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/benchmark"
)

// model is the configuration and state of clusterstorage_storage_comparison.
type model struct {
	Targets   map[string]targetModel `tfsdk:"targets"`
	Baseline  types.String           `tfsdk:"baseline"`
	Rounds    types.Int64            `tfsdk:"rounds"`
	Node      types.String           `tfsdk:"node"`
	Namespace types.String           `tfsdk:"namespace"`
	MaxAge    types.String           `tfsdk:"max_age"`
	benchmark.PodModel
	benchmark.JobModel

	Timeouts timeouts.Value `tfsdk:"timeouts"`

	Cached     types.Bool             `tfsdk:"cached"`
	MeasuredAt types.String           `tfsdk:"measured_at"`
	Order      [][]string             `tfsdk:"order"`
	Results    map[string]resultModel `tfsdk:"results"`
	MetricsAPI types.Bool             `tfsdk:"metrics_api"`
	Table      types.String           `tfsdk:"table"`
	Warnings   []string               `tfsdk:"warnings"`
}

// targetModel is one entry of `targets`: the benchmark's target attributes and backend_namespace.
type targetModel struct {
	benchmark.TargetModel
	BackendNamespace types.String `tfsdk:"backend_namespace"`
}

// resultModel is one entry of `results`.
type resultModel struct {
	Kind   types.String `tfsdk:"kind"`
	Rounds types.Int64  `tfsdk:"rounds"`
	benchmark.IOResultModel
	Summary    types.String           `tfsdk:"summary"`
	Spread     *benchmark.SpreadModel `tfsdk:"spread"`
	VsBaseline map[string]ratioModel  `tfsdk:"vs_baseline"`
	Memory     *memoryModel           `tfsdk:"memory"`
}

// ratioModel is one entry of a result's `vs_baseline`.
type ratioModel struct {
	Ratio       types.Float64 `tfsdk:"ratio"`
	Significant bool          `tfsdk:"significant"`
}

// memoryModel is a result's `memory`.
type memoryModel struct {
	Namespace     string      `tfsdk:"namespace"`
	Pods          int64       `tfsdk:"pods"`
	RequestsBytes int64       `tfsdk:"requests_bytes"`
	UsageBytes    types.Int64 `tfsdk:"usage_bytes"`
}

// target is one validated target of a comparison.
type target struct {
	Name             string
	Request          benchmark.Request
	BackendNamespace string
}

// names returns the target names in order: the order of the first round.
func (m model) names() []string {
	out := make([]string, 0, len(m.Targets))
	for name := range m.Targets {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// benchModel is the benchmark configuration of one target: the comparison's job and pod
// settings with the target's own attributes. A node_path target takes no pod settings.
func (m model) benchModel(t targetModel) benchmark.Model {
	b := benchmark.Model{
		TargetModel: t.TargetModel,
		PodModel:    m.PodModel, JobModel: m.JobModel,
		MaxAge: m.MaxAge, IncludeRawJSON: types.BoolNull(), Rounds: types.Int64Null(),
	}
	if b.Node.IsNull() {
		b.Node = m.Node
	}
	if b.Namespace.IsNull() {
		b.Namespace = m.Namespace
	}
	if !t.NodePath.IsNull() {
		b.Image, b.ImagePullPolicy, b.HostNetwork = types.StringNull(), types.StringNull(), types.BoolNull()
	}
	return b
}

// anyUnknown reports whether an input is not known yet (only at validation).
func (m model) anyUnknown() bool {
	if m.Targets == nil {
		return true // unknown or null map: the schema reports null
	}
	vals := []interface{ IsUnknown() bool }{m.Baseline, m.Rounds, m.Node, m.Namespace, m.MaxAge}
	for _, t := range m.Targets {
		vals = append(vals, t.BackendNamespace)
		if m.benchModel(t).AnyUnknown() {
			return true
		}
	}
	for _, v := range vals {
		if v.IsUnknown() {
			return true
		}
	}
	return false
}

// request validates the configuration: the targets (each as the benchmark validates it, with
// problems reported at the target's attributes), the baseline and rounds.
func (m model) request() ([]target, int, diag.Diagnostics) {
	var diags diag.Diagnostics
	at := func(name string) path.Path { return path.Root("targets").AtMapKey(name) }
	if len(m.Targets) == 0 {
		diags.AddAttributeError(path.Root("targets"), "No targets", "A comparison needs at least one target (and a second to compare it with): add entries to targets.")
	}
	rounds, rdiags := benchmark.RoundsOf(m.Rounds, DefaultRounds, path.Root("rounds"))
	diags.Append(rdiags...)
	names := m.names()
	if _, ok := m.Targets[m.Baseline.ValueString()]; !ok && len(names) > 0 {
		diags.AddAttributeError(path.Root("baseline"), "Unknown baseline",
			fmt.Sprintf("baseline %q is not one of the targets (%s): name one of them.", m.Baseline.ValueString(), benchmark.ListOrNone(names)))
	}
	var out []target
	for _, name := range names {
		t := m.Targets[name]
		set := 0
		for _, v := range []types.String{t.StorageClass, t.Claim, t.NodePath} {
			if !v.IsNull() {
				set++
			}
		}
		if set != 1 {
			diags.AddAttributeError(at(name), "Exactly one target required",
				fmt.Sprintf("Target %q must set exactly one of storage_class, claim and node_path.", name))
			continue
		}
		r, bdiags := m.benchModel(t).Request()
		diags.Append(repath(bdiags, at(name))...)
		out = append(out, target{Name: name, Request: r, BackendNamespace: t.BackendNamespace.ValueString()})
	}
	return out, rounds, diags
}

// repath moves the diagnostics about target attributes (storage_class, node, ...) below p, the
// comparison target they belong to; diagnostics about the fio job or pod settings stay where
// they are, at the comparison's own attributes.
func repath(in diag.Diagnostics, p path.Path) diag.Diagnostics {
	targetAttr := map[string]bool{}
	for _, n := range targetAttributeNames {
		targetAttr[n] = true
	}
	var out diag.Diagnostics
	for _, d := range in {
		dp, ok := d.(diag.DiagnosticWithPath)
		if !ok {
			out.Append(d)
			continue
		}
		steps := dp.Path().Steps()
		var attr path.PathStepAttributeName
		isAttr := false
		if len(steps) == 1 {
			attr, isAttr = steps[0].(path.PathStepAttributeName)
		}
		if !isAttr || !targetAttr[string(attr)] {
			out.Append(d)
			continue
		}
		if d.Severity() == diag.SeverityError {
			out.AddAttributeError(p.AtName(string(attr)), d.Summary(), d.Detail())
		} else {
			out.AddAttributeWarning(p.AtName(string(attr)), d.Summary(), d.Detail())
		}
	}
	return out
}
