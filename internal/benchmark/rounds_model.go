package benchmark

import (
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/fio"
)

// SpreadModel is the `spread` attribute: one figureSpreadModel per headline figure (Figures).
type SpreadModel struct {
	ReadIOPS         *figureSpreadModel `tfsdk:"read_iops"`
	ReadBandwidth    *figureSpreadModel `tfsdk:"read_bandwidth"`
	ReadLatencyMean  *figureSpreadModel `tfsdk:"read_latency_mean"`
	ReadLatencyP99   *figureSpreadModel `tfsdk:"read_latency_p99"`
	WriteIOPS        *figureSpreadModel `tfsdk:"write_iops"`
	WriteBandwidth   *figureSpreadModel `tfsdk:"write_bandwidth"`
	WriteLatencyMean *figureSpreadModel `tfsdk:"write_latency_mean"`
	WriteLatencyP99  *figureSpreadModel `tfsdk:"write_latency_p99"`
	SyncLatencyP99   *figureSpreadModel `tfsdk:"sync_latency_p99"`
}

type figureSpreadModel struct {
	Min       float64 `tfsdk:"min"`
	Max       float64 `tfsdk:"max"`
	CVPercent float64 `tfsdk:"cv_percent"`
}

func figureSpreadOf(s Spread) *figureSpreadModel {
	return &figureSpreadModel{Min: s.Min, Max: s.Max, CVPercent: 100 * s.CV}
}

// SpreadModelOf writes spreads (keyed by figure) into the model.
func SpreadModelOf(sp map[string]Spread) *SpreadModel {
	return &SpreadModel{
		ReadIOPS: figureSpreadOf(sp["read_iops"]), ReadBandwidth: figureSpreadOf(sp["read_bandwidth"]),
		ReadLatencyMean: figureSpreadOf(sp["read_latency_mean"]), ReadLatencyP99: figureSpreadOf(sp["read_latency_p99"]),
		WriteIOPS: figureSpreadOf(sp["write_iops"]), WriteBandwidth: figureSpreadOf(sp["write_bandwidth"]),
		WriteLatencyMean: figureSpreadOf(sp["write_latency_mean"]), WriteLatencyP99: figureSpreadOf(sp["write_latency_p99"]),
		SyncLatencyP99: figureSpreadOf(sp["sync_latency_p99"]),
	}
}

// figureUnit says in what unit a figure's values are, for descriptions.
func figureUnit(f Figure) string {
	switch f.Key {
	case "read_iops", "write_iops":
		return "I/O operations per second"
	case "read_bandwidth", "write_bandwidth":
		return "bytes per second"
	default:
		return "microseconds"
	}
}

// SpreadAttribute is the schema of `spread`, from Figures.
func SpreadAttribute() schema.SingleNestedAttribute {
	attrs := make(map[string]schema.Attribute, len(Figures))
	for _, f := range Figures {
		attrs[f.Key] = schema.SingleNestedAttribute{
			Computed:            true,
			MarkdownDescription: fmt.Sprintf("Spread of the %s over the rounds, in %s: `min`, `max` and `cv_percent`.", f.Label, figureUnit(f)),
			Attributes: map[string]schema.Attribute{
				"min":        schema.Float64Attribute{Computed: true, MarkdownDescription: "Lowest value of one round."},
				"max":        schema.Float64Attribute{Computed: true, MarkdownDescription: "Highest value of one round."},
				"cv_percent": schema.Float64Attribute{Computed: true, MarkdownDescription: "Coefficient of variation: the sample standard deviation over the mean, in percent (`0` for a single round)."},
			},
		}
	}
	return schema.SingleNestedAttribute{
		Computed: true,
		MarkdownDescription: "How much the rounds differed, for each headline figure (`read_iops`, `read_bandwidth`, `read_latency_mean`, `read_latency_p99`, " +
			"the same for writes, and `sync_latency_p99`): the lowest and highest round and the coefficient of variation. " +
			"The figures in `read`, `write` and `sync` are the medians of the rounds.",
		Attributes: attrs,
	}
}

// RoundsAttribute is the schema of `rounds` with the given default.
func RoundsAttribute(what string, def int) schema.Int64Attribute {
	return schema.Int64Attribute{
		Optional: true, Computed: true,
		MarkdownDescription: fmt.Sprintf("How often %s, `1` to `%d` (default: `%d`). Reported figures are the medians of the rounds; `spread` says how much they differed.", what, MaxRounds, def),
		Validators:          []validator.Int64{int64validator.Between(1, MaxRounds)},
	}
}

// RoundsOf reads a rounds attribute (def when null), reporting a value out of range at p.
func RoundsOf(v types.Int64, def int, p path.Path) (int, diag.Diagnostics) {
	var diags diag.Diagnostics
	if v.IsNull() || v.IsUnknown() {
		return def, diags
	}
	n := v.ValueInt64()
	if n < 1 || n > MaxRounds {
		diags.AddAttributeError(p, "Invalid rounds", fmt.Sprintf("rounds is %d: set it from 1 to %d.", n, MaxRounds))
		return def, diags
	}
	return int(n), diags
}

// spreadOfStored returns the spread a stored result was measured with; a result cached before
// rounds existed is one round.
func spreadOfStored(s stored) map[string]Spread {
	if s.Spread != nil {
		return s.Spread
	}
	return Spreads([]fio.Result{s.Result})
}

// SummaryOf is the `summary` line of r, the median of rounds rounds with the spreads sp: fio's
// totals, and the spread of several rounds.
func SummaryOf(r fio.Result, rounds int, sp map[string]Spread) string {
	line := fio.Summary(r)
	if extra := spreadSummary(rounds, sp); extra != "" {
		line += "; " + extra
	}
	return line
}
