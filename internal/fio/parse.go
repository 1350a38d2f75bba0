package fio

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Result is what one fio run measured.
//
// Jobs holds one entry per job fio reported: with group_reporting (as every
// rendered spec sets) that is one per job section, its clones already summed
// by fio. Read, Write, Sync, CPU and RuntimeSeconds aggregate all of them:
//   - entries of one reporting group ran at the same time: their IOPS and
//     bandwidth add up;
//   - groups ran one after another (stonewall): IOPS and bandwidth are the
//     total I/Os and bytes over the total time that direction ran, i.e. a
//     time-weighted average;
//   - latency means are weighted by I/O count, the maximum is the largest,
//     and each percentile is the largest of the jobs' percentiles: an upper
//     bound, since fio's JSON carries no histogram to merge.
//
// With a single job the aggregate equals that job's figures.
type Result struct {
	// FioVersion is fio's own version string, e.g. "fio-3.33".
	FioVersion string
	// Time is when fio started, from its JSON; zero if fio did not say.
	Time time.Time
	// RuntimeSeconds is how long the jobs measured, added up over groups.
	RuntimeSeconds float64
	Read           IOStats
	Write          IOStats
	Sync           SyncStats
	CPU            CPUPercent
	Jobs           []JobResult
	// Messages are the non-JSON lines fio printed around its JSON (warnings
	// and notes), trimmed, in order.
	Messages []string
}

// JobResult is one job as fio reported it.
type JobResult struct {
	Name           string
	GroupID        int
	RuntimeSeconds float64
	Read           IOStats
	Write          IOStats
	Sync           SyncStats
	CPU            CPUPercent
}

// IOStats is one direction (reads or writes) of a job or of a whole run.
type IOStats struct {
	IOPS                    float64
	BandwidthBytesPerSecond float64
	// Bytes and IOs are what completed while measuring.
	Bytes int64
	IOs   int64
	// RuntimeSeconds is how long this direction ran.
	RuntimeSeconds      float64
	LatencyMicroseconds Latency
	// LatencySource is the fio statistic latency comes from: "lat" (total
	// latency, submission to completion, used when fio reported its
	// percentiles, as rendered specs ask) or "clat" (completion latency).
	LatencySource string
}

// SyncStats are the fsync/fdatasync calls of a job or of a whole run.
type SyncStats struct {
	Count               int64
	LatencyMicroseconds Latency
}

// Latency is a latency distribution; every value is in microseconds, and a
// percentile fio did not report is 0.
type Latency struct {
	Mean float64
	P50  float64
	P95  float64
	P99  float64
	P999 float64
	Max  float64
}

// CPUPercent is the CPU time fio used, as a percentage of one CPU.
type CPUPercent struct {
	User   float64
	System float64
}

// Error is a failed fio run: fio printed no JSON, or a job reported an error.
type Error struct {
	// Job is the failed job's name; empty when fio printed no JSON.
	Job string
	// Code is the errno fio reported for the job; 0 when there is none.
	Code int
	// Message is fio's own text about the failure (its "fio: ..." lines), or a
	// description of Code when fio printed none.
	Message string
}

func (e *Error) Error() string {
	switch {
	case e.Job != "" && e.Message != "":
		return fmt.Sprintf("fio job %q failed with error %d: %s", e.Job, e.Code, e.Message)
	case e.Job != "":
		return fmt.Sprintf("fio job %q failed with error %d", e.Job, e.Code)
	case e.Message != "":
		return "fio failed: " + e.Message
	default:
		return "fio failed and printed nothing"
	}
}

// The JSON of fio 3.x; numbers are float64 so that out-of-range values in
// malformed output decode rather than fail half way.
type jsonOutput struct {
	Version   string    `json:"fio version"`
	Timestamp float64   `json:"timestamp"`
	Jobs      []jsonJob `json:"jobs"`
}

type jsonJob struct {
	Name       string   `json:"jobname"`
	GroupID    float64  `json:"groupid"`
	Error      float64  `json:"error"`
	Read       jsonDir  `json:"read"`
	Write      jsonDir  `json:"write"`
	Sync       jsonSync `json:"sync"`
	JobRuntime float64  `json:"job_runtime"` // ms, summed over clones
	UsrCPU     float64  `json:"usr_cpu"`
	SysCPU     float64  `json:"sys_cpu"`
}

type jsonDir struct {
	IOBytes  float64  `json:"io_bytes"`
	BWBytes  *float64 `json:"bw_bytes"` // bytes/s, fio 3.x
	BW       float64  `json:"bw"`       // KiB/s
	IOPS     float64  `json:"iops"`
	Runtime  float64  `json:"runtime"` // ms
	TotalIOs float64  `json:"total_ios"`
	ClatNS   jsonLat  `json:"clat_ns"`
	LatNS    jsonLat  `json:"lat_ns"`
}

type jsonSync struct {
	TotalIOs float64 `json:"total_ios"`
	LatNS    jsonLat `json:"lat_ns"`
}

type jsonLat struct {
	Max        float64            `json:"max"`
	Mean       float64            `json:"mean"`
	N          float64            `json:"N"`
	Percentile map[string]float64 `json:"percentile"`
}

// maxMessage bounds the fio text kept in an Error.
const maxMessage = 4096

// Parse reads the output of fio --output-format=json (fio 3.x). It accepts
// fio's stdout alone or followed by its stderr: lines before and after the
// JSON document (fio's notes and "fio: ..." messages) are kept in
// Result.Messages. It returns an *Error when fio printed no JSON, or when a
// job reports a non-zero error, carrying fio's own message.
func Parse(out []byte) (Result, error) {
	doc, start, end, decodeErr := findJSON(out)
	var stray []string
	if start == len(out) && decodeErr != nil {
		// fio's stderr can share one stream with its JSON (a pod's log), and then a "fio: ..."
		// line of its lands inside the document: read it without them, and keep them.
		if cleaned, removed := withoutFioLines(out); len(removed) > 0 {
			if d, s, e, err := findJSON(cleaned); s < len(cleaned) && err == nil {
				doc, start, end, decodeErr, out, stray = d, s, e, nil, cleaned, removed
			}
		}
	}
	messages := lines(out[:start])
	messages = append(messages, stray...)
	messages = append(messages, lines(out[end:])...)
	if start == len(out) {
		text := lines(out)
		if decodeErr != nil {
			text = append([]string{"cannot read fio's JSON: " + decodeErr.Error()}, text...)
		}
		return Result{}, &Error{Message: clip(strings.Join(text, "\n"))}
	}
	if len(doc.Jobs) == 0 {
		return Result{}, &Error{Message: clip(strings.Join(append([]string{"fio reported no jobs"}, messages...), "\n"))}
	}
	for _, j := range doc.Jobs {
		if j.Error != 0 {
			return Result{}, jobError(j, messages)
		}
	}
	r := Result{FioVersion: doc.Version, Messages: messages}
	if doc.Timestamp > 0 && doc.Timestamp < 1e12 {
		r.Time = time.Unix(int64(doc.Timestamp), 0).UTC()
	}
	for _, j := range doc.Jobs {
		r.Jobs = append(r.Jobs, jobResult(j))
	}
	aggregate(&r)
	return r, nil
}

// findJSON decodes the first JSON object that starts a line of out, and
// returns where it starts and ends; start is len(out) when there is none, and
// then err is the first decoding error, if a line started with '{'.
func findJSON(out []byte) (doc jsonOutput, start, end int, err error) {
	const maxTries = 16
	tries := 0
	for pos := 0; pos < len(out) && tries < maxTries; {
		lineEnd := bytes.IndexByte(out[pos:], '\n')
		if lineEnd < 0 {
			lineEnd = len(out)
		} else {
			lineEnd += pos + 1
		}
		trimmed := bytes.TrimLeft(out[pos:lineEnd], " \t\r")
		if len(trimmed) > 0 && trimmed[0] == '{' {
			tries++
			from := lineEnd - len(trimmed)
			dec := json.NewDecoder(bytes.NewReader(out[from:]))
			var d jsonOutput
			decodeErr := dec.Decode(&d)
			if decodeErr == nil {
				return d, pos, from + int(dec.InputOffset()), nil
			}
			if err == nil {
				err = decodeErr
			}
		}
		pos = lineEnd
	}
	return jsonOutput{}, len(out), len(out), err
}

// withoutFioLines returns out without the lines that are fio's own messages ("fio: ..."), and
// those lines, trimmed.
func withoutFioLines(out []byte) (cleaned []byte, removed []string) {
	for _, l := range bytes.SplitAfter(out, []byte("\n")) {
		if t := bytes.TrimSpace(l); bytes.HasPrefix(t, []byte("fio: ")) {
			removed = append(removed, string(t))
			continue
		}
		cleaned = append(cleaned, l...)
	}
	return cleaned, removed
}

// lines returns the non-empty lines of b, trimmed.
func lines(b []byte) []string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func clip(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	return "..." + s[len(s)-maxMessage:]
}

func jobError(j jsonJob, messages []string) *Error {
	e := &Error{Job: j.Name, Code: int(clampInt(j.Error))}
	var fioLines []string
	for _, m := range messages {
		if strings.HasPrefix(m, "fio:") || strings.Contains(strings.ToLower(m), "error") {
			fioLines = append(fioLines, m)
		}
	}
	if len(fioLines) > 0 {
		e.Message = clip(strings.Join(fioLines, "\n"))
	} else {
		e.Message = errnoText[e.Code]
	}
	return e
}

// errnoText describes the Linux errnos fio jobs most often fail with, for
// when fio's own message was not captured.
var errnoText = map[int]string{
	1: "operation not permitted (EPERM)", 2: "no such file or directory (ENOENT)",
	5: "input/output error (EIO)", 6: "no such device or address (ENXIO)",
	9: "bad file descriptor (EBADF)", 11: "resource temporarily unavailable (EAGAIN)",
	12: "cannot allocate memory (ENOMEM)", 13: "permission denied (EACCES)",
	16: "device or resource busy (EBUSY)", 17: "file exists (EEXIST)",
	19: "no such device (ENODEV)", 20: "not a directory (ENOTDIR)",
	21: "is a directory (EISDIR)", 22: "invalid argument (EINVAL)",
	27: "file too large (EFBIG)", 28: "no space left on device (ENOSPC)",
	30: "read-only file system (EROFS)", 38: "function not implemented (ENOSYS)",
	95: "operation not supported (EOPNOTSUPP)", 110: "connection timed out (ETIMEDOUT)",
	122: "disk quota exceeded (EDQUOT)",
}

// clampInt converts a JSON number to an int64, clamped to int64's range (0
// for NaN).
func clampInt(f float64) int64 {
	switch {
	case math.IsNaN(f):
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

func jobResult(j jsonJob) JobResult {
	jr := JobResult{
		Name:    j.Name,
		GroupID: int(clampInt(j.GroupID)),
		Read:    dirStats(j.Read),
		Write:   dirStats(j.Write),
		Sync: SyncStats{
			Count:               clampInt(math.Max(j.Sync.TotalIOs, j.Sync.LatNS.N)),
			LatencyMicroseconds: latency(j.Sync.LatNS),
		},
		CPU: CPUPercent{User: j.UsrCPU, System: j.SysCPU},
	}
	jr.RuntimeSeconds = math.Max(jr.Read.RuntimeSeconds, jr.Write.RuntimeSeconds)
	if jr.RuntimeSeconds == 0 {
		jr.RuntimeSeconds = j.JobRuntime / 1000
	}
	return jr
}

func dirStats(d jsonDir) IOStats {
	s := IOStats{
		IOPS:           d.IOPS,
		Bytes:          clampInt(d.IOBytes),
		IOs:            clampInt(d.TotalIOs),
		RuntimeSeconds: d.Runtime / 1000,
	}
	if d.BWBytes != nil {
		s.BandwidthBytesPerSecond = *d.BWBytes
	} else {
		s.BandwidthBytesPerSecond = d.BW * 1024
	}
	if s.IOs == 0 {
		return s
	}
	if len(d.LatNS.Percentile) > 0 || len(d.ClatNS.Percentile) == 0 && d.LatNS.N > 0 {
		s.LatencyMicroseconds, s.LatencySource = latency(d.LatNS), "lat"
	} else {
		s.LatencyMicroseconds, s.LatencySource = latency(d.ClatNS), "clat"
	}
	return s
}

func latency(l jsonLat) Latency {
	lat := Latency{Mean: l.Mean / 1000, Max: l.Max / 1000}
	for k, v := range l.Percentile {
		p, err := strconv.ParseFloat(k, 64)
		if err != nil {
			continue
		}
		switch {
		case near(p, 50):
			lat.P50 = v / 1000
		case near(p, 95):
			lat.P95 = v / 1000
		case near(p, 99):
			lat.P99 = v / 1000
		case near(p, 99.9):
			lat.P999 = v / 1000
		}
	}
	return lat
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

// aggregate fills r's totals from r.Jobs, as the Result documentation says.
func aggregate(r *Result) {
	// Group the entries, keeping the order groups first appear in.
	var order []int
	groups := map[int][]JobResult{}
	for _, j := range r.Jobs {
		if _, ok := groups[j.GroupID]; !ok {
			order = append(order, j.GroupID)
		}
		groups[j.GroupID] = append(groups[j.GroupID], j)
	}
	var reads, writes []IOStats
	var syncs []SyncStats
	var cpuWeight float64
	for _, id := range order {
		g := concurrent(groups[id])
		reads, writes, syncs = append(reads, g.Read), append(writes, g.Write), append(syncs, g.Sync)
		r.RuntimeSeconds += g.RuntimeSeconds
		r.CPU.User += g.CPU.User * g.RuntimeSeconds
		r.CPU.System += g.CPU.System * g.RuntimeSeconds
		cpuWeight += g.RuntimeSeconds
		if len(order) == 1 {
			r.CPU = g.CPU
		}
	}
	if len(order) > 1 && cpuWeight > 0 {
		r.CPU.User /= cpuWeight
		r.CPU.System /= cpuWeight
	}
	r.Read, r.Write, r.Sync = sequential(reads), sequential(writes), combineSync(syncs)
}

// concurrent sums the entries of one reporting group.
func concurrent(entries []JobResult) JobResult {
	if len(entries) == 1 {
		return entries[0]
	}
	var g JobResult
	var reads, writes []IOStats
	var syncs []SyncStats
	for _, e := range entries {
		reads, writes, syncs = append(reads, e.Read), append(writes, e.Write), append(syncs, e.Sync)
		g.RuntimeSeconds = math.Max(g.RuntimeSeconds, e.RuntimeSeconds)
		g.CPU.User += e.CPU.User / float64(len(entries))
		g.CPU.System += e.CPU.System / float64(len(entries))
	}
	g.Read, g.Write, g.Sync = sumIO(reads), sumIO(writes), combineSync(syncs)
	return g
}

func sumIO(list []IOStats) IOStats {
	var s IOStats
	for _, e := range list {
		s.IOPS += e.IOPS
		s.BandwidthBytesPerSecond += e.BandwidthBytesPerSecond
		s.RuntimeSeconds = math.Max(s.RuntimeSeconds, e.RuntimeSeconds)
	}
	s.Bytes, s.IOs, s.LatencyMicroseconds, s.LatencySource = totals(list)
	return s
}

// sequential combines stats of groups that ran one after another.
func sequential(list []IOStats) IOStats {
	var active []IOStats
	for _, e := range list {
		if e.IOs > 0 {
			active = append(active, e)
		}
	}
	switch len(active) {
	case 0:
		return IOStats{}
	case 1:
		return active[0]
	}
	var s IOStats
	for _, e := range active {
		s.RuntimeSeconds += e.RuntimeSeconds
	}
	s.Bytes, s.IOs, s.LatencyMicroseconds, s.LatencySource = totals(active)
	if s.RuntimeSeconds > 0 {
		s.IOPS = float64(s.IOs) / s.RuntimeSeconds
		s.BandwidthBytesPerSecond = float64(s.Bytes) / s.RuntimeSeconds
	}
	return s
}

func totals(list []IOStats) (bytes, ios int64, lat Latency, source string) {
	var weighted []weightedLatency
	for _, e := range list {
		bytes = satAdd(bytes, e.Bytes)
		ios = satAdd(ios, e.IOs)
		weighted = append(weighted, weightedLatency{e.LatencyMicroseconds, e.IOs})
		if source == "" {
			source = e.LatencySource
		}
	}
	return bytes, ios, combineLatency(weighted), source
}

func combineSync(list []SyncStats) SyncStats {
	var s SyncStats
	var weighted []weightedLatency
	for _, e := range list {
		s.Count = satAdd(s.Count, e.Count)
		weighted = append(weighted, weightedLatency{e.LatencyMicroseconds, e.Count})
	}
	s.LatencyMicroseconds = combineLatency(weighted)
	return s
}

type weightedLatency struct {
	lat Latency
	n   int64
}

// combineLatency weights means by count and takes the largest percentiles
// and maximum.
func combineLatency(list []weightedLatency) Latency {
	var out Latency
	var n float64
	for _, w := range list {
		if w.n <= 0 {
			continue
		}
		out.Mean += w.lat.Mean * float64(w.n)
		n += float64(w.n)
		out.P50 = math.Max(out.P50, w.lat.P50)
		out.P95 = math.Max(out.P95, w.lat.P95)
		out.P99 = math.Max(out.P99, w.lat.P99)
		out.P999 = math.Max(out.P999, w.lat.P999)
		out.Max = math.Max(out.Max, w.lat.Max)
	}
	if n > 0 {
		out.Mean /= n
	}
	return out
}

func satAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	if b < 0 && a < math.MinInt64-b {
		return math.MinInt64
	}
	return a + b
}
