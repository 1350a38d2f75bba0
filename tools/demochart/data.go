package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
)

// Metrics holds one target's benchmark results, as the demo's chart_data
// output reports them. Missing keys stay 0; unknown keys are ignored. The
// _min and _max keys are the lowest and highest round of repeated runs, drawn
// as a range bar on the median; a target without them gets none.
type Metrics struct {
	ReadIOPS          number `json:"read_iops"`
	WriteIOPS         number `json:"write_iops"`
	ReadLatencyMs     number `json:"read_latency_ms"`
	WriteLatencyMs    number `json:"write_latency_ms"`
	ReadIOPSMin       number `json:"read_iops_min"`
	ReadIOPSMax       number `json:"read_iops_max"`
	WriteIOPSMin      number `json:"write_iops_min"`
	WriteIOPSMax      number `json:"write_iops_max"`
	ReadLatencyMsMin  number `json:"read_latency_ms_min"`
	ReadLatencyMsMax  number `json:"read_latency_ms_max"`
	WriteLatencyMsMin number `json:"write_latency_ms_min"`
	WriteLatencyMsMax number `json:"write_latency_ms_max"`
	ReadMiBs          number `json:"read_mib_s"`
	WriteMiBs         number `json:"write_mib_s"`
	MemoryOverheadMiB number `json:"memory_overhead_mib"`
}

// Target is one named benchmark target with its results.
type Target struct {
	Name string
	Metrics
}

// number is a float64 that also accepts null and numeric strings, since
// Terraform may render numbers either way depending on the output's type.
type number float64

func (n *number) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		*n = 0
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("not a number: %q", s)
		}
		*n = number(f)
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("not a number: %s", b)
	}
	*n = number(f)
	return nil
}

// ParseChartData reads the JSON object that `terraform output -json chart_data`
// prints and returns its targets sorted by name.
func ParseChartData(r io.Reader) ([]Target, error) {
	raw, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read chart data: %w", err)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, errors.New("chart data: empty input; pipe in `terraform output -json chart_data`")
	}
	var m map[string]Metrics
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("chart data: invalid JSON (want an object keyed by target name, "+
			"each value an object of numbers such as read_iops, write_latency_ms): %w", err)
	}
	if len(m) == 0 {
		return nil, errors.New("chart data: no targets in the JSON object")
	}
	targets := make([]Target, 0, len(m))
	for name, mt := range m {
		targets = append(targets, Target{Name: name, Metrics: mt})
	}
	sort.Slice(targets, func(i, j int) bool { return targets[i].Name < targets[j].Name })
	return targets, nil
}
