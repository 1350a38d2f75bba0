package comparison

import (
	"regexp"
	"strings"
	"testing"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/benchmark"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/fio"
)

// result is one round of an 8k job: read and write IOPS (bandwidth follows) and the read p99 in
// µs (the mean is half of it, the maximum twice).
func result(readIOPS, writeIOPS, readP99 float64) fio.Result {
	return fio.Result{
		FioVersion: "fio-3.33",
		Read:       fio.IOStats{IOPS: readIOPS, BandwidthBytesPerSecond: readIOPS * 8192, IOs: int64(readIOPS) * 2, LatencyMicroseconds: fio.Latency{Mean: readP99 / 2, P99: readP99, Max: readP99 * 2}},
		Write:      fio.IOStats{IOPS: writeIOPS, BandwidthBytesPerSecond: writeIOPS * 8192},
		CPU:        fio.CPUPercent{User: readIOPS / 1000},
	}
}

// measuredOf measures a target from rounds of (read IOPS, write IOPS, read p99 µs).
func measuredOf(name string, kind benchmark.TargetKind, rounds ...[3]float64) measured {
	rs := make([]fio.Result, len(rounds))
	for i, r := range rounds {
		rs[i] = result(r[0], r[1], r[2])
	}
	return measured{Name: name, Kind: kind, Median: benchmark.MedianResult(rs), Spreads: benchmark.Spreads(rs), Rounds: len(rs)}
}

func TestRatioOf(t *testing.T) {
	for _, c := range []struct {
		name         string
		target, base benchmark.Spread
		rounds       int
		want         ratio
	}{
		{"apart", benchmark.Spread{Median: 200, Min: 190, Max: 210}, benchmark.Spread{Median: 100, Min: 95, Max: 105}, 3, ratio{Value: 2, Known: true, Significant: true}},
		{"overlapping", benchmark.Spread{Median: 104, Min: 99, Max: 110}, benchmark.Spread{Median: 100, Min: 95, Max: 105}, 3, ratio{Value: 1.04, Known: true}},
		{"slower, apart", benchmark.Spread{Median: 50, Min: 45, Max: 55}, benchmark.Spread{Median: 100, Min: 95, Max: 105}, 2, ratio{Value: 0.5, Known: true, Significant: true}},
		{"one round never tells", benchmark.Spread{Median: 200, Min: 200, Max: 200}, benchmark.Spread{Median: 100, Min: 100, Max: 100}, 1, ratio{Value: 2, Known: true}},
		{"baseline zero", benchmark.Spread{Median: 5, Min: 5, Max: 5}, benchmark.Spread{}, 3, ratio{Significant: true}},
	} {
		if got := ratioOf(c.target, c.base, c.rounds); got != c.want {
			t.Errorf("%s: ratioOf = %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestCacheWarnings(t *testing.T) {
	disk := measuredOf("disk", benchmark.TargetNodePath, [3]float64{1000, 400, 900}, [3]float64{1100, 420, 800}, [3]float64{1050, 410, 850})
	cached := measuredOf("cached", benchmark.TargetStorageClass, [3]float64{9000, 410, 90}, [3]float64{9500, 430, 95}, [3]float64{8000, 405, 99})
	same := measuredOf("same", benchmark.TargetStorageClass, [3]float64{1080, 380, 870}, [3]float64{1000, 440, 820}, [3]float64{1120, 400, 880})
	got := cacheWarnings([]measured{disk, cached, same}, "disk")
	if len(got) != 1 || !strings.Contains(got[0], `Target "cached" is faster than its baseline "disk"`) ||
		!strings.Contains(got[0], "read IOPS 8.57x") || !strings.Contains(got[0], "read latency (p99)") ||
		strings.Contains(got[0], "write IOPS") || !strings.Contains(got[0], "probably a cache") {
		t.Errorf("cacheWarnings = %q", got)
	}
	// Only a node_path baseline is the disk below the others.
	pvBase := disk
	pvBase.Kind = benchmark.TargetStorageClass
	if got := cacheWarnings([]measured{pvBase, cached}, "disk"); len(got) != 0 {
		t.Errorf("warnings against a storage class baseline: %q", got)
	}
	// A target on another node sits on another disk.
	elsewhere := cached
	disk.Node, elsewhere.Node = "k8s1", "k8s2"
	if got := cacheWarnings([]measured{disk, elsewhere}, "disk"); len(got) != 0 {
		t.Errorf("warnings for a target on another node than the baseline: %q", got)
	}
	cached.Node = "k8s1"
	if got := cacheWarnings([]measured{disk, cached}, "disk"); len(got) != 1 {
		t.Errorf("no warning for a faster target on the baseline's node: %q", got)
	}
	// Faster within the spread is no warning; one round never is.
	oneRound := measuredOf("cached", benchmark.TargetStorageClass, [3]float64{9000, 410, 90})
	if got := cacheWarnings([]measured{disk, same, oneRound}, "disk"); len(got) != 0 {
		t.Errorf("warnings within the spread or of one round: %q", got)
	}
}

func TestSpreadWarnings(t *testing.T) {
	calm := measuredOf("calm", benchmark.TargetStorageClass, [3]float64{1000, 400, 900}, [3]float64{1010, 404, 800})
	noisy := measuredOf("noisy", benchmark.TargetStorageClass, [3]float64{1000, 400, 900}, [3]float64{2000, 404, 800})
	got := spreadWarnings([]measured{calm, noisy})
	if len(got) != 1 || !strings.Contains(got[0], `target "noisy" differ too much to rank it (read IOPS CV 47 %, above 15 %)`) {
		t.Errorf("spreadWarnings = %q", got)
	}
}

func TestTable(t *testing.T) {
	disk := measuredOf("node disk", benchmark.TargetNodePath, [3]float64{1000, 400, 900}, [3]float64{1100, 420, 800}, [3]float64{1050, 410, 850})
	pv := measuredOf("local PV", benchmark.TargetStorageClass, [3]float64{1080, 380, 870}, [3]float64{1000, 440, 820}, [3]float64{1120, 400, 880})
	oe := measuredOf("OpenEBS", benchmark.TargetStorageClass, [3]float64{500, 200, 1800}, [3]float64{520, 210, 1700}, [3]float64{510, 205, 1750})
	oe.Memory = &memoryUse{Namespace: "openebs", Pods: 2, RequestsBytes: 100 << 20, UsageBytes: 43 << 20, UsageKnown: true}
	got := table("fio database", []measured{oe, pv, disk}, "node disk")
	want := `fio database                 node disk        OpenEBS       local PV
read IOPS                     1050 ±5%        510 ±2%       1080 ±6%
read bandwidth           8.2 MiB/s ±5%  4.0 MiB/s ±2%  8.4 MiB/s ±6%
read latency (mean)        0.42 ms ±6%    0.88 ms ±3%    0.43 ms ±4%
read latency (p99)         0.85 ms ±6%    1.75 ms ±3%    0.87 ms ±4%
write IOPS                     410 ±2%        205 ±2%        400 ±8%
write bandwidth          3.2 MiB/s ±2%  1.6 MiB/s ±2%  3.1 MiB/s ±8%
read IOPS vs node disk           1.00x          0.49x        1.03x ~
write IOPS vs node disk          1.00x          0.50x        0.98x ~
memory (working set)             0 MiB         43 MiB          0 MiB
memory (requests)                0 MiB        100 MiB          0 MiB
(medians of 3 interleaved rounds, ± coefficient of variation; ~ marks a ratio within the spread)`
	if got != want {
		t.Errorf("table =\n%s\nwant\n%s", got, want)
	}
	// The node each figure came from, when a target named one.
	disk.Node, pv.Node = "k8s1", "k8s3"
	got = table("fio", []measured{disk, pv, oe}, "node disk")
	if line := strings.Split(got, "\n")[1]; !regexp.MustCompile(`^node +k8s1 +any +k8s3$`).MatchString(line) {
		t.Errorf("node row %q, want the node of each column (any: the scheduler chose):\n%s", line, got)
	}
	oe.Memory.UsageKnown = false
	got = table("fio", []measured{disk, oe}, "node disk")
	if !strings.Contains(got, "no metrics API") || !strings.Contains(got, "(the cluster serves no metrics API (metrics.k8s.io): memory usage unknown)") {
		t.Errorf("table without metrics API:\n%s", got)
	}
}
