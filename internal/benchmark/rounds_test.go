package benchmark

import (
	"math"
	"reflect"
	"testing"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/fio"
)

func TestInterleave(t *testing.T) {
	for _, c := range []struct {
		n, rounds int
		want      [][]int
	}{
		{1, 1, [][]int{{0}}},
		{1, 3, [][]int{{0}, {0}, {0}}},
		{2, 3, [][]int{{0, 1}, {1, 0}, {0, 1}}},
		{3, 3, [][]int{{0, 1, 2}, {1, 2, 0}, {2, 0, 1}}},
		{3, 4, [][]int{{0, 1, 2}, {1, 2, 0}, {2, 0, 1}, {0, 1, 2}}},
		{3, 0, [][]int{}},
	} {
		if got := Interleave(c.n, c.rounds); !reflect.DeepEqual(got, c.want) {
			t.Errorf("interleave(%d, %d) = %v, want %v", c.n, c.rounds, got, c.want)
		}
	}
	// Over n rounds every target takes every position once.
	for n := 1; n <= 6; n++ {
		seen := make([]map[int]bool, n)
		for i := range seen {
			seen[i] = map[int]bool{}
		}
		for _, order := range Interleave(n, n) {
			for pos, target := range order {
				seen[target][pos] = true
			}
		}
		for target, pos := range seen {
			if len(pos) != n {
				t.Errorf("n=%d: target %d took positions %v, want all %d", n, target, pos, n)
			}
		}
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{5}, 5},
		{[]float64{3, 1}, 2},
		{[]float64{45.7, 41.6, 45.0}, 45.0},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{-1, 0, 10, 10, 10}, 10},
	} {
		in := append([]float64(nil), c.xs...)
		if got := median(c.xs); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.xs, got, c.want)
		}
		if !reflect.DeepEqual(in, c.xs) {
			t.Errorf("median changed its input: %v, was %v", c.xs, in)
		}
	}
}

func TestSpreadOf(t *testing.T) {
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	for _, c := range []struct {
		name string
		xs   []float64
		want Spread
	}{
		{"none", nil, Spread{}},
		{"one round has no variation", []float64{42}, Spread{Median: 42, Min: 42, Max: 42}},
		{"equal rounds", []float64{7, 7, 7}, Spread{Median: 7, Min: 7, Max: 7}},
		// mean 2, sample sd 1: CV 0.5.
		{"sample standard deviation", []float64{1, 2, 3}, Spread{Median: 2, Min: 1, Max: 3, CV: 0.5}},
		// The three runs: 41.6k, 45.0k, 45.7k. Mean 44100, sd 2193.17...
		{"the issue's runs", []float64{41600, 45000, 45700}, Spread{Median: 45000, Min: 41600, Max: 45700, CV: 2193.171219946131 / 44100}},
		{"zero mean", []float64{0, 0}, Spread{}},
	} {
		got := spreadOf(c.xs)
		if !near(got.Median, c.want.Median) || !near(got.Min, c.want.Min) || !near(got.Max, c.want.Max) || !near(got.CV, c.want.CV) {
			t.Errorf("%s: spreadOf(%v) = %+v, want %+v", c.name, c.xs, got, c.want)
		}
	}
}

func TestSpreadOverlaps(t *testing.T) {
	for _, c := range []struct {
		a, b Spread
		want bool
	}{
		{Spread{Min: 1, Max: 2}, Spread{Min: 3, Max: 4}, false},
		{Spread{Min: 3, Max: 4}, Spread{Min: 1, Max: 2}, false},
		{Spread{Min: 1, Max: 3}, Spread{Min: 2, Max: 4}, true},
		{Spread{Min: 1, Max: 2}, Spread{Min: 2, Max: 4}, true},
		{Spread{Min: 1, Max: 10}, Spread{Min: 2, Max: 3}, true},
	} {
		if got := c.a.Overlaps(c.b); got != c.want {
			t.Errorf("%+v overlaps %+v = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

func result(readIOPS, writeIOPS, readP99 float64) fio.Result {
	return fio.Result{
		FioVersion: "fio-3.33",
		Read:       fio.IOStats{IOPS: readIOPS, BandwidthBytesPerSecond: readIOPS * 8192, IOs: int64(readIOPS) * 2, LatencyMicroseconds: fio.Latency{Mean: readP99 / 2, P99: readP99, Max: readP99 * 2}},
		Write:      fio.IOStats{IOPS: writeIOPS, BandwidthBytesPerSecond: writeIOPS * 8192},
		CPU:        fio.CPUPercent{User: readIOPS / 1000},
	}
}

func TestMedianResult(t *testing.T) {
	one := result(100, 50, 900)
	if got := MedianResult([]fio.Result{one}); !reflect.DeepEqual(got, one) {
		t.Errorf("one round changed: %+v", got)
	}
	// Each figure is its own median: read IOPS from the second round, p99 from the third.
	got := MedianResult([]fio.Result{result(100, 10, 300), result(300, 30, 100), result(200, 20, 200)})
	if got.Read.IOPS != 200 || got.Write.IOPS != 20 || got.Read.LatencyMicroseconds.P99 != 200 || got.Read.IOs != 400 {
		t.Errorf("median of three = read %+v write %+v", got.Read, got.Write)
	}
	if got.Read.BandwidthBytesPerSecond != 200*8192 || got.CPU.User != 0.2 || got.FioVersion != "fio-3.33" {
		t.Errorf("median of three = %+v", got)
	}
	if len(got.Jobs) != 0 {
		t.Errorf("per-job results kept: %v", got.Jobs)
	}
	// Even counts average the two middle rounds.
	got = MedianResult([]fio.Result{result(100, 10, 100), result(200, 40, 300)})
	if got.Read.IOPS != 150 || got.Write.IOPS != 25 || got.Read.LatencyMicroseconds.P99 != 200 {
		t.Errorf("median of two = read %+v write %+v", got.Read, got.Write)
	}
}

func TestSpreads(t *testing.T) {
	sp := Spreads([]fio.Result{result(100, 10, 300), result(300, 30, 100), result(200, 20, 200)})
	if len(sp) != len(Figures) {
		t.Errorf("spreads has %d figures, want %d", len(sp), len(Figures))
	}
	if s := sp["read_iops"]; s.Min != 100 || s.Max != 300 || s.Median != 200 || math.Abs(s.CV-0.5) > 1e-9 {
		t.Errorf("read_iops spread = %+v", s)
	}
	if s := sp["sync_latency_p99"]; s != (Spread{}) {
		t.Errorf("sync spread without syncs = %+v", s)
	}
}

func TestSpreadSummary(t *testing.T) {
	sp := Spreads([]fio.Result{result(100, 10, 300), result(300, 30, 100), result(200, 20, 200)})
	if got, want := spreadSummary(3, sp), "3 rounds: read IOPS 100-300 (CV 50.0 %), write IOPS 10-30 (CV 50.0 %)"; got != want {
		t.Errorf("spreadSummary = %q, want %q", got, want)
	}
	if got := spreadSummary(1, sp); got != "" {
		t.Errorf("one round: %q", got)
	}
	syncOnly := map[string]Spread{"sync_latency_p99": {Min: 1000, Max: 3000, CV: 0.1}}
	if got, want := spreadSummary(2, syncOnly), "2 rounds: fsync p99 1.00 ms-3.00 ms (CV 10.0 %)"; got != want {
		t.Errorf("sync only = %q, want %q", got, want)
	}
}

func TestRoundsKey(t *testing.T) {
	if roundsKey("abc", 1) != "abc" {
		t.Error("one round must keep the benchmark's key")
	}
	if a, b := roundsKey("abc", 2), roundsKey("abc", 3); a == b || a == "abc" || len(a) != 16 {
		t.Errorf("roundsKey = %q, %q", a, b)
	}
}
