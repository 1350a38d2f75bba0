package benchmark

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/fio"
)

// This file holds the arithmetic of repeated runs, with no Kubernetes and no Terraform in it:
// the order interleaved rounds visit their targets in, the median result of several rounds, and
// the spread of each headline figure.

// DefaultRounds is how often clusterstorage_storage_benchmark runs its job by default.
const DefaultRounds = 1

// MaxRounds bounds rounds: each round is a whole fio run.
const MaxRounds = 20

// Interleave returns, for each of rounds rounds, the order to visit n targets in: round r starts
// with target r mod n and goes round (A B C, then B C A, then C A B, then A B C again), so a
// machine that slows down or speeds up during the rounds hits every target in every position.
func Interleave(n, rounds int) [][]int {
	out := make([][]int, 0, rounds)
	for r := range rounds {
		order := make([]int, n)
		for i := range n {
			order[i] = (r + i) % n
		}
		out = append(out, order)
	}
	return out
}

// Spread is what several rounds measured of one figure.
type Spread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	// CV is the coefficient of variation: the sample standard deviation over the mean (0 for a
	// single round, or a mean of 0).
	CV float64 `json:"cv"`
}

// spreadOf returns the spread of xs; the zero spread for none.
func spreadOf(xs []float64) Spread {
	if len(xs) == 0 {
		return Spread{}
	}
	s := Spread{Median: median(xs), Min: xs[0], Max: xs[0]}
	var sum float64
	for _, x := range xs {
		s.Min, s.Max = math.Min(s.Min, x), math.Max(s.Max, x)
		sum += x
	}
	mean := sum / float64(len(xs))
	if len(xs) < 2 || mean == 0 {
		return s
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	s.CV = math.Sqrt(ss/float64(len(xs)-1)) / math.Abs(mean)
	return s
}

// median returns the middle value of xs (the mean of the two middle ones for an even count); 0
// for none. xs is not changed.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	mid := len(s) / 2
	if len(s)%2 == 1 {
		return s[mid]
	}
	return (s[mid-1] + s[mid]) / 2
}

// Overlaps reports whether two spreads' ranges [Min, Max] share a value.
func (s Spread) Overlaps(o Spread) bool {
	return s.Min <= o.Max && o.Min <= s.Max
}

// Figure is one headline figure of a result.
type Figure struct {
	// Key names the figure in the spread attributes, e.g. "read_iops".
	Key string
	// Label names it in tables and summaries, e.g. "read IOPS".
	Label string
	// HigherIsBetter is true for throughput, false for latency.
	HigherIsBetter bool
	get            func(fio.Result) float64
	// Format writes a value of the figure for people.
	Format func(float64) string
}

// Figures are the headline figures rounds report the spread of.
var Figures = []Figure{
	{"read_iops", "read IOPS", true, func(r fio.Result) float64 { return r.Read.IOPS }, formatCount},
	{"read_bandwidth", "read bandwidth", true, func(r fio.Result) float64 { return r.Read.BandwidthBytesPerSecond }, formatMiBs},
	{"read_latency_mean", "read latency (mean)", false, func(r fio.Result) float64 { return r.Read.LatencyMicroseconds.Mean }, formatMs},
	{"read_latency_p99", "read latency (p99)", false, func(r fio.Result) float64 { return r.Read.LatencyMicroseconds.P99 }, formatMs},
	{"write_iops", "write IOPS", true, func(r fio.Result) float64 { return r.Write.IOPS }, formatCount},
	{"write_bandwidth", "write bandwidth", true, func(r fio.Result) float64 { return r.Write.BandwidthBytesPerSecond }, formatMiBs},
	{"write_latency_mean", "write latency (mean)", false, func(r fio.Result) float64 { return r.Write.LatencyMicroseconds.Mean }, formatMs},
	{"write_latency_p99", "write latency (p99)", false, func(r fio.Result) float64 { return r.Write.LatencyMicroseconds.P99 }, formatMs},
	{"sync_latency_p99", "fsync latency (p99)", false, func(r fio.Result) float64 { return r.Sync.LatencyMicroseconds.P99 }, formatMs},
}

func formatCount(v float64) string { return fmt.Sprintf("%.0f", v) }
func formatMiBs(v float64) string  { return fmt.Sprintf("%.1f MiB/s", v/(1<<20)) }
func formatMs(v float64) string    { return fmt.Sprintf("%.2f ms", v/1000) }

// Spreads returns the spread of every headline figure over results.
func Spreads(results []fio.Result) map[string]Spread {
	out := make(map[string]Spread, len(Figures))
	for _, f := range Figures {
		xs := make([]float64, len(results))
		for i, r := range results {
			xs[i] = f.get(r)
		}
		out[f.Key] = spreadOf(xs)
	}
	return out
}

// MedianResult combines rounds into one result: every figure is the median of that figure over
// the rounds, taken on its own (so the median read IOPS and the median p99 may come from
// different rounds). Version, time and messages are the first round's; per-job results are
// left out (they differ by round). One round is returned as it is.
func MedianResult(results []fio.Result) fio.Result {
	if len(results) == 1 {
		return results[0]
	}
	if len(results) == 0 {
		return fio.Result{}
	}
	m := func(get func(fio.Result) float64) float64 {
		xs := make([]float64, len(results))
		for i, r := range results {
			xs[i] = get(r)
		}
		return median(xs)
	}
	mi := func(get func(fio.Result) int64) int64 {
		return int64(math.Round(m(func(r fio.Result) float64 { return float64(get(r)) })))
	}
	lat := func(get func(fio.Result) fio.Latency) fio.Latency {
		return fio.Latency{
			Mean: m(func(r fio.Result) float64 { return get(r).Mean }),
			P50:  m(func(r fio.Result) float64 { return get(r).P50 }),
			P95:  m(func(r fio.Result) float64 { return get(r).P95 }),
			P99:  m(func(r fio.Result) float64 { return get(r).P99 }),
			P999: m(func(r fio.Result) float64 { return get(r).P999 }),
			Max:  m(func(r fio.Result) float64 { return get(r).Max }),
		}
	}
	io := func(get func(fio.Result) fio.IOStats) fio.IOStats {
		return fio.IOStats{
			IOPS:                    m(func(r fio.Result) float64 { return get(r).IOPS }),
			BandwidthBytesPerSecond: m(func(r fio.Result) float64 { return get(r).BandwidthBytesPerSecond }),
			Bytes:                   mi(func(r fio.Result) int64 { return get(r).Bytes }),
			IOs:                     mi(func(r fio.Result) int64 { return get(r).IOs }),
			RuntimeSeconds:          m(func(r fio.Result) float64 { return get(r).RuntimeSeconds }),
			LatencyMicroseconds:     lat(func(r fio.Result) fio.Latency { return get(r).LatencyMicroseconds }),
			LatencySource:           get(results[0]).LatencySource,
		}
	}
	first := results[0]
	return fio.Result{
		FioVersion:     first.FioVersion,
		Time:           first.Time,
		RuntimeSeconds: m(func(r fio.Result) float64 { return r.RuntimeSeconds }),
		Read:           io(func(r fio.Result) fio.IOStats { return r.Read }),
		Write:          io(func(r fio.Result) fio.IOStats { return r.Write }),
		Sync: fio.SyncStats{
			Count:               mi(func(r fio.Result) int64 { return r.Sync.Count }),
			LatencyMicroseconds: lat(func(r fio.Result) fio.Latency { return r.Sync.LatencyMicroseconds }),
		},
		CPU: fio.CPUPercent{
			User:   m(func(r fio.Result) float64 { return r.CPU.User }),
			System: m(func(r fio.Result) float64 { return r.CPU.System }),
		},
		Messages: first.Messages,
	}
}

// spreadSummary is the line `summary` adds for several rounds, e.g.
// "3 rounds: read IOPS 7500-7900 (CV 2.6 %), write IOPS 3200-3400 (CV 3.0 %)": the range and
// coefficient of variation of each direction's IOPS (of fsync latency for a job that only
// syncs). "" for a single round.
func spreadSummary(rounds int, sp map[string]Spread) string {
	if rounds < 2 {
		return ""
	}
	var parts []string
	for _, key := range []string{"read_iops", "write_iops"} {
		s := sp[key]
		if s.Max == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s-%s (CV %.1f %%)", FigureByKey(key).Label, formatCount(s.Min), formatCount(s.Max), 100*s.CV))
	}
	if s := sp["sync_latency_p99"]; len(parts) == 0 && s.Max > 0 {
		parts = append(parts, fmt.Sprintf("fsync p99 %s-%s (CV %.1f %%)", formatMs(s.Min), formatMs(s.Max), 100*s.CV))
	}
	if len(parts) == 0 {
		return fmt.Sprintf("%d rounds", rounds)
	}
	return fmt.Sprintf("%d rounds: %s", rounds, strings.Join(parts, ", "))
}

// FigureByKey returns the headline figure named key; for an unknown key, a figure labelled with
// the key itself.
func FigureByKey(key string) Figure {
	for _, f := range Figures {
		if f.Key == key {
			return f
		}
	}
	return Figure{Key: key, Label: key}
}
