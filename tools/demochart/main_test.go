package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
)

const sample = `{
  "node disk (fio)": {"read_iops": 19102, "write_iops": 8190, "read_latency_ms": 0.58, "write_latency_ms": 0.71, "memory_overhead_mib": 0},
  "local PV": {"read_iops": 18234.5, "write_iops": 7812.3, "read_latency_ms": 0.61, "write_latency_ms": 0.74, "read_mib_s": 142.5},
  "OpenEBS hostpath": {"read_iops": 17650, "write_iops": "7544", "read_latency_ms": 0.63, "memory_overhead_mib": 96, "some_future_key": true}
}`

func TestRunWritesSVGWithTargetNames(t *testing.T) {
	out := filepath.Join(t.TempDir(), "chart.svg")
	var stderr bytes.Buffer
	if err := run([]string{"-o", out}, strings.NewReader(sample), &stderr); err != nil {
		t.Fatalf("run: %v (stderr: %s)", err, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	svg := string(b)
	if !strings.HasPrefix(svg, "<?xml") || !strings.Contains(svg, "<svg") {
		t.Fatalf("output is not SVG: %.200s", svg)
	}
	for _, want := range []string{
		"local PV", "node disk (fio)", "OpenEBS hostpath",
		"IOPS (operations/s)", "Mean latency (ms)", "Memory overhead (MiB)",
		"read", "write", defaultTitle,
	} {
		if !strings.Contains(svg, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
}

func TestRunWritesPNG(t *testing.T) {
	out := filepath.Join(t.TempDir(), "chart.png")
	if err := run([]string{"-o", out, "-title", "custom"}, strings.NewReader(sample), &bytes.Buffer{}); err != nil {
		t.Fatalf("run: %v", err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("output is not a PNG")
	}
}

func TestParseChartData(t *testing.T) {
	targets, err := ParseChartData(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tg := range targets {
		names = append(names, tg.Name)
	}
	if got, want := strings.Join(names, "|"), "OpenEBS hostpath|local PV|node disk (fio)"; got != want {
		t.Errorf("order = %q, want %q (sorted by name)", got, want)
	}
	o := targets[0]
	if o.WriteIOPS != 7544 || o.WriteLatencyMs != 0 || o.MemoryOverheadMiB != 96 {
		t.Errorf("OpenEBS hostpath = %+v; want numeric string parsed and missing keys 0", o.Metrics)
	}
}

func TestMalformedJSON(t *testing.T) {
	for name, in := range map[string]string{
		"truncated":     `{"local PV": {"read_iops": 1`,
		"not an object": `[1, 2, 3]`,
		"value a word":  `{"local PV": {"read_iops": "fast"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "chart.svg")
			err := run([]string{"-o", out}, strings.NewReader(in), &bytes.Buffer{})
			if err == nil {
				t.Fatal("want an error for malformed JSON")
			}
			if !strings.Contains(err.Error(), "chart data: invalid JSON") {
				t.Errorf("error %q does not say the JSON is invalid", err)
			}
			if _, statErr := os.Stat(out); !os.IsNotExist(statErr) {
				t.Errorf("output file was written despite the error")
			}
		})
	}
}

func TestInputAndFlagErrors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		args []string
		in   string
		want string
	}{
		{nil, sample, "-o is required"},
		{[]string{"-o", filepath.Join(dir, "a.svg")}, "", "empty input"},
		{[]string{"-o", filepath.Join(dir, "b.svg")}, "{}", "no targets"},
	}
	for _, c := range cases {
		err := run(c.args, strings.NewReader(c.in), &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("run(%q, %q) = %v, want error containing %q", c.args, c.in, err, c.want)
		}
	}
}

// Targets with min and max get range bars: three more strokes (line and two caps) per range.
// The highest rounds equal the medians here, so the axes stay the same.
func TestRangeBars(t *testing.T) {
	render := func(data string) string {
		targets, err := ParseChartData(strings.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := Render(&b, targets, "t", SVG); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	plain := render(`{"a": {"read_iops": 100, "write_iops": 50, "read_latency_ms": 1, "write_latency_ms": 2}}`)
	ranged := render(`{"a": {"read_iops": 100, "write_iops": 50, "read_latency_ms": 1, "write_latency_ms": 2,
	  "read_iops_min": 90, "read_iops_max": 100, "write_iops_min": 45, "write_iops_max": 50,
	  "read_latency_ms_min": 0.9, "read_latency_ms_max": 1, "write_latency_ms_min": 1.5, "write_latency_ms_max": 2}}`)
	if got, want := strings.Count(ranged, "<path")-strings.Count(plain, "<path"), 4*3; got != want {
		t.Errorf("range bars added %d paths, want %d (4 ranges of 3 strokes)", got, want)
	}
}

// The x labels of the last demo's seven targets never overlap: wrapped at the comma when that
// fits a slot, else one line each at 45 degrees; no panel carries a legend over its bars.
func TestLabelsAndLegend(t *testing.T) {
	if got := wrapLabel("local PV, node 3"); got != "local PV\nnode 3" {
		t.Errorf("wrapLabel = %q", got)
	}
	demo := []string{"OpenEBS hostpath, node 1", "disk, node 1", "disk, node 2", "disk, node 3", "local PV, node 1", "local PV, node 2", "local PV, node 3"}
	p := newPanel("IOPS", "IOPS", demo)
	if p.X.Tick.Label.Rotation == 0 {
		t.Errorf("seven long names are not tilted")
	}
	slot := panelDataWidth / vg.Length(len(demo))
	if h := p.X.Tick.Label.Rectangle("Xg").Size().Y; slot*vg.Length(math.Sin(p.X.Tick.Label.Rotation)) <= h {
		t.Errorf("tilted labels one slot (%v) apart overlap: line height %v", slot, h)
	}
	few := newPanel("IOPS", "IOPS", []string{"disk, node 1", "local PV, node 1"})
	if few.X.Tick.Label.Rotation != 0 {
		t.Errorf("two short names tilted")
	}
	var targets []Target
	for _, n := range demo {
		targets = append(targets, Target{Name: n, Metrics: Metrics{ReadIOPS: 1000, WriteIOPS: 500}})
	}
	var b bytes.Buffer
	if err := Render(&b, targets, "t", SVG); err != nil {
		t.Fatal(err)
	}
	// One legend line for the figure: "write" appears once, not in each panel.
	if !strings.Contains(b.String(), legendNote) || strings.Count(b.String(), ">write<") != 1 {
		t.Errorf("the chart's legend: note %v, %d times \"write\"", strings.Contains(b.String(), legendNote), strings.Count(b.String(), ">write<"))
	}
}
