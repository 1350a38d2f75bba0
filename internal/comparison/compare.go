package comparison

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/benchmark"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/fio"
)

// This file holds the arithmetic and the words of clusterstorage_storage_comparison, with no
// Kubernetes and no Terraform in it: ratios to the baseline and whether they exceed the spread,
// the warnings, and the table.

// DefaultRounds is how many interleaved rounds a comparison runs by default.
const DefaultRounds = 3

// maxRankCV is the coefficient of variation of a headline figure above which a comparison warns
// that the spread is too large to rank the targets.
const maxRankCV = 0.15

// measured is what the rounds of one target gave.
type measured struct {
	Name string
	Kind benchmark.TargetKind
	// Node is the node the target ran on ("" when the scheduler chose: no node named).
	Node    string
	Median  fio.Result
	Spreads map[string]benchmark.Spread
	Rounds  int
	// Memory is the memory of the pods serving the target, when it names a backend namespace.
	Memory *memoryUse
}

// memoryUse is the memory of the pods in a backend namespace.
type memoryUse struct {
	Namespace     string
	Pods          int
	RequestsBytes int64
	// UsageBytes is the working set from the metrics API; UsageKnown is false when the cluster
	// does not serve it.
	UsageBytes int64
	UsageKnown bool
}

// ratio is one figure of a target over the same figure of the baseline.
type ratio struct {
	// Value is target median / baseline median; Known is false when the baseline's median is 0.
	Value float64
	Known bool
	// Significant is true when the difference is larger than the spread: the ranges the rounds
	// of the two covered ([min, max]) do not overlap, and there were at least two rounds.
	Significant bool
}

// ratioOf compares one figure of a target with the baseline's.
func ratioOf(target, baseline benchmark.Spread, rounds int) ratio {
	r := ratio{Significant: rounds >= 2 && !target.Overlaps(baseline)}
	if baseline.Median != 0 {
		r.Value, r.Known = target.Median/baseline.Median, true
	}
	return r
}

// ratios compares every headline figure of t with the baseline b.
func ratios(t, b measured) map[string]ratio {
	out := make(map[string]ratio, len(benchmark.Figures))
	for _, f := range benchmark.Figures {
		out[f.Key] = ratioOf(t.Spreads[f.Key], b.Spreads[f.Key], min(t.Rounds, b.Rounds))
	}
	return out
}

// activeFigures are the figures any of the targets measured (a read-only job has no write
// figures, only an fsync job has sync latency).
func activeFigures(ms []measured) []benchmark.Figure {
	var out []benchmark.Figure
	for _, f := range benchmark.Figures {
		for _, m := range ms {
			if m.Spreads[f.Key].Max != 0 {
				out = append(out, f)
				break
			}
		}
	}
	return out
}

// cacheWarnings returns a warning for each target that is faster than a node_path baseline (the
// raw disk below it) beyond the spread on a figure: storage cannot beat the disk it sits on, so
// something (the page cache, a backend's cache) served the I/O. A target on another node than the
// baseline's sits on another disk: it is not warned about.
func cacheWarnings(ms []measured, baseline string) []string {
	var b *measured
	for i := range ms {
		if ms[i].Name == baseline {
			b = &ms[i]
		}
	}
	if b == nil || b.Kind != benchmark.TargetNodePath {
		return nil
	}
	var out []string
	for _, m := range ms {
		if m.Name == baseline || (m.Node != "" && b.Node != "" && m.Node != b.Node) {
			continue
		}
		rs := ratios(m, *b)
		var faster []string
		for _, f := range activeFigures([]measured{m, *b}) {
			r := rs[f.Key]
			if !r.Significant || !r.Known {
				continue
			}
			if (f.HigherIsBetter && r.Value > 1) || (!f.HigherIsBetter && r.Value < 1) {
				faster = append(faster, fmt.Sprintf("%s %.2fx", f.Label, r.Value))
			}
		}
		if len(faster) > 0 {
			out = append(out, fmt.Sprintf("Target %q is faster than its baseline %q, the node's disk it sits on, beyond the spread of %d rounds (%s): "+
				"probably a cache served the I/O, not the storage. Raise size above the node's memory, or use direct I/O (direct = true).",
				m.Name, baseline, min(m.Rounds, b.Rounds), strings.Join(faster, ", ")))
		}
	}
	return out
}

// spreadWarnings returns a warning for each target whose IOPS (or, for a job without reads and
// writes, fsync latency) varied by more than maxRankCV over its rounds.
func spreadWarnings(ms []measured) []string {
	var out []string
	for _, m := range ms {
		var wide []string
		for _, key := range []string{"read_iops", "write_iops", "sync_latency_p99"} {
			if s := m.Spreads[key]; s.Max != 0 && s.CV > maxRankCV {
				wide = append(wide, fmt.Sprintf("%s CV %.0f %%", benchmark.FigureByKey(key).Label, 100*s.CV))
			}
		}
		if len(wide) > 0 {
			out = append(out, fmt.Sprintf("The rounds of target %q differ too much to rank it (%s, above %.0f %%): "+
				"something else loads the machine, or the runs are too short. Raise runtime or rounds, or run the comparison on a quiet machine.",
				m.Name, strings.Join(wide, ", "), 100*maxRankCV))
		}
	}
	return out
}

// columnOrder is the order of the table's columns: the baseline first, then the others by name.
func columnOrder(ms []measured, baseline string) []measured {
	out := append([]measured(nil), ms...)
	sort.SliceStable(out, func(i, j int) bool {
		if (out[i].Name == baseline) != (out[j].Name == baseline) {
			return out[i].Name == baseline
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// table writes the comparison as the seed article's table: a row per headline figure the job
// measured (the median, ± its coefficient of variation), the IOPS ratio to the baseline (marked
// `~` when within the spread), and the memory of the pods serving each target.
func table(title string, ms []measured, baseline string) string {
	cols := columnOrder(ms, baseline)
	var b *measured
	for i := range cols {
		if cols[i].Name == baseline {
			b = &cols[i]
		}
	}
	header := append([]string{title}, make([]string, len(cols))...)
	for i, m := range cols {
		header[i+1] = m.Name
	}
	rows := [][]string{header}
	if slices.ContainsFunc(cols, func(m measured) bool { return m.Node != "" }) {
		row := []string{"node"}
		for _, m := range cols {
			row = append(row, cmp.Or(m.Node, "any"))
		}
		rows = append(rows, row)
	}
	active := activeFigures(cols)
	for _, f := range active {
		row := []string{f.Label}
		for _, m := range cols {
			s := m.Spreads[f.Key]
			cell := f.Format(s.Median)
			if m.Rounds > 1 {
				cell += fmt.Sprintf(" ±%.0f%%", 100*s.CV)
			}
			row = append(row, cell)
		}
		rows = append(rows, row)
	}
	if b != nil {
		for _, f := range active {
			if f.Key != "read_iops" && f.Key != "write_iops" {
				continue
			}
			row := []string{f.Label + " vs " + baseline}
			for _, m := range cols {
				r := ratioOf(m.Spreads[f.Key], b.Spreads[f.Key], min(m.Rounds, b.Rounds))
				switch {
				case m.Name == baseline:
					row = append(row, "1.00x")
				case !r.Known:
					row = append(row, "-")
				case r.Significant:
					row = append(row, fmt.Sprintf("%.2fx", r.Value))
				default:
					row = append(row, fmt.Sprintf("%.2fx ~", r.Value))
				}
			}
			rows = append(rows, row)
		}
	}
	anyMemory, anyUnknown := false, false
	for _, m := range cols {
		if m.Memory != nil {
			anyMemory = true
			anyUnknown = anyUnknown || !m.Memory.UsageKnown
		}
	}
	if anyMemory {
		usage, requests := []string{"memory (working set)"}, []string{"memory (requests)"}
		for _, m := range cols {
			if m.Memory == nil {
				usage, requests = append(usage, "0 MiB"), append(requests, "0 MiB")
				continue
			}
			requests = append(requests, formatMiB(m.Memory.RequestsBytes))
			if m.Memory.UsageKnown {
				usage = append(usage, formatMiB(m.Memory.UsageBytes))
			} else {
				usage = append(usage, "no metrics API")
			}
		}
		rows = append(rows, usage, requests)
	}
	widths := make([]int, len(header))
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	var out strings.Builder
	for _, r := range rows {
		line := fmt.Sprintf("%-*s", widths[0], r[0])
		for i, c := range r[1:] {
			line += fmt.Sprintf("  %*s", widths[i+1], c)
		}
		out.WriteString(strings.TrimRight(line, " ") + "\n")
	}
	notes := []string{}
	if len(cols) > 0 && cols[0].Rounds > 1 {
		notes = append(notes, fmt.Sprintf("medians of %d interleaved rounds, ± coefficient of variation; ~ marks a ratio within the spread", cols[0].Rounds))
	}
	if anyUnknown {
		notes = append(notes, "the cluster serves no metrics API (metrics.k8s.io): memory usage unknown")
	}
	for _, n := range notes {
		out.WriteString("(" + n + ")\n")
	}
	return strings.TrimRight(out.String(), "\n")
}

func formatMiB(b int64) string { return fmt.Sprintf("%d MiB", (b+(1<<19))>>20) }
