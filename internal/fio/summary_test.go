package fio

import (
	"strings"
	"testing"
)

func TestSummary(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    Result
		want string
	}{
		{"nothing", Result{}, "no I/O completed"},
		{"mixed", Result{
			Read:  IOStats{IOs: 1, IOPS: 7757.4, BandwidthBytesPerSecond: 7757.4 * 8192, LatencyMicroseconds: Latency{P99: 1470}},
			Write: IOStats{IOs: 1, IOPS: 3325, BandwidthBytesPerSecond: 3325 * 8192, LatencyMicroseconds: Latency{P99: 2310.4}},
		}, "read 7757 IOPS 60.6 MiB/s p99 1.47 ms; write 3325 IOPS 26.0 MiB/s p99 2.31 ms"},
		{"units", Result{
			Read: IOStats{IOs: 1, IOPS: 2.25, BandwidthBytesPerSecond: 2.5 * (1 << 30), LatencyMicroseconds: Latency{P99: 87.44}},
		}, "read 2.2 IOPS 2.5 GiB/s p99 87.4 µs"},
		{"slow", Result{
			Write: IOStats{IOs: 1, IOPS: 12, BandwidthBytesPerSecond: 512, LatencyMicroseconds: Latency{P99: 2_500_000}},
		}, "write 12 IOPS 512.0 B/s p99 2.50 s"},
		{"fsync", Result{
			Write: IOStats{IOs: 1, IOPS: 419, BandwidthBytesPerSecond: 419 * 8192, LatencyMicroseconds: Latency{P99: 68.1}},
			Sync:  SyncStats{Count: 840, LatencyMicroseconds: Latency{P99: 5210}},
		}, "write 419 IOPS 3.3 MiB/s p99 68.1 µs; fsync 840 calls p99 5.21 ms"},
	} {
		if got := Summary(tc.r); got != tc.want {
			t.Errorf("%s: Summary = %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

func TestSummaryCaptured(t *testing.T) {
	for file, want := range map[string][]string{
		"randrw.json":    {"read ", " IOPS ", " MiB/s p99 ", "; write "},
		"read.json":      {"read "},
		"write.json":     {"write "},
		"fsync.json":     {"write ", "; fsync "},
		"stonewall.json": {"read ", "; write "},
	} {
		r, err := Parse(readTestdata(t, file))
		if err != nil {
			t.Fatal(err)
		}
		got := Summary(r)
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: Summary = %q, want it to contain %q", file, got, w)
			}
		}
		if strings.Contains(got, "\n") {
			t.Errorf("%s: Summary has several lines: %q", file, got)
		}
		t.Logf("%s: %s", file, got)
	}
}
