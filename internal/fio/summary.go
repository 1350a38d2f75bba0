package fio

import (
	"fmt"
	"math"
	"strings"
)

// Summary returns one readable line about r's totals, e.g.
// "read 7757 IOPS 60.6 MiB/s p99 1.47 ms; write 3325 IOPS 26.0 MiB/s p99 2.31 ms".
// Directions without I/O are left out; fsync calls, when any, are summarised
// by their p99 latency.
func Summary(r Result) string {
	var parts []string
	for _, d := range []struct {
		name string
		s    IOStats
	}{{"read", r.Read}, {"write", r.Write}} {
		if d.s.IOs == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s IOPS %s p99 %s", d.name,
			formatIOPS(d.s.IOPS), formatBandwidth(d.s.BandwidthBytesPerSecond), formatMicroseconds(d.s.LatencyMicroseconds.P99)))
	}
	if r.Sync.Count > 0 {
		parts = append(parts, fmt.Sprintf("fsync %d calls p99 %s", r.Sync.Count, formatMicroseconds(r.Sync.LatencyMicroseconds.P99)))
	}
	if len(parts) == 0 {
		return "no I/O completed"
	}
	return strings.Join(parts, "; ")
}

func formatIOPS(v float64) string {
	if v < 10 {
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// formatBandwidth writes bytes per second in binary units.
func formatBandwidth(v float64) string {
	units := []string{"B/s", "KiB/s", "MiB/s", "GiB/s", "TiB/s"}
	i := 0
	for i < len(units)-1 && math.Abs(v) >= 1024 {
		v /= 1024
		i++
	}
	return fmt.Sprintf("%.1f %s", v, units[i])
}

// formatMicroseconds writes a latency with three significant digits in µs, ms
// or s.
func formatMicroseconds(us float64) string {
	v, unit := us, "µs"
	switch {
	case math.Abs(us) >= 1e6:
		v, unit = us/1e6, "s"
	case math.Abs(us) >= 1e3:
		v, unit = us/1e3, "ms"
	}
	return trimFloat(v) + " " + unit
}

// trimFloat writes v with three significant digits (at least the integer
// part), e.g. 1.47, 14.7, 147, 1470.
func trimFloat(v float64) string {
	switch a := math.Abs(v); {
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}
