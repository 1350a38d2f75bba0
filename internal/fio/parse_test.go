package fio

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkDirection asserts plausible figures for a direction that did I/O.
func checkDirection(t *testing.T, what string, s IOStats) {
	t.Helper()
	l := s.LatencyMicroseconds
	switch {
	case s.IOs <= 0 || s.Bytes <= 0 || s.IOPS <= 0 || s.BandwidthBytesPerSecond <= 0:
		t.Errorf("%s: no I/O: %+v", what, s)
	case s.RuntimeSeconds < 1.5 || s.RuntimeSeconds > 3:
		t.Errorf("%s: runtime %v s, captured with 2s", what, s.RuntimeSeconds)
	case !(0 < l.P50 && l.P50 <= l.P95 && l.P95 <= l.P99 && l.P99 <= l.P999 && l.P999 <= l.Max*1.01):
		// fio reports percentiles as bucket bounds, which may exceed the max by under 1%.
		t.Errorf("%s: percentiles out of order: %+v", what, l)
	case l.Mean <= 0 || l.Mean > l.Max:
		t.Errorf("%s: mean %v outside (0, max %v]", what, l.Mean, l.Max)
	case s.LatencySource != "lat":
		t.Errorf("%s: latency from %q, want lat", what, s.LatencySource)
	}
	// IOPS and bandwidth agree with the block count (fio rounds runtime to ms).
	if got := float64(s.IOs) / s.RuntimeSeconds; math.Abs(got-s.IOPS) > 0.02*s.IOPS {
		t.Errorf("%s: IOPS %v but %d I/Os in %v s", what, s.IOPS, s.IOs, s.RuntimeSeconds)
	}
	if got := float64(s.Bytes) / s.RuntimeSeconds; math.Abs(got-s.BandwidthBytesPerSecond) > 0.02*s.BandwidthBytesPerSecond {
		t.Errorf("%s: bandwidth %v B/s but %d bytes in %v s", what, s.BandwidthBytesPerSecond, s.Bytes, s.RuntimeSeconds)
	}
}

func checkIdle(t *testing.T, what string, s IOStats) {
	t.Helper()
	if s != (IOStats{RuntimeSeconds: s.RuntimeSeconds}) {
		t.Errorf("%s: want no I/O, got %+v", what, s)
	}
}

func TestParseCaptured(t *testing.T) {
	for _, tc := range []struct {
		file        string
		jobs        []string
		read, write bool
		blockSize   int64
		sync        bool
		messages    []string
	}{
		{file: "randrw.json", jobs: []string{"database"}, read: true, write: true, blockSize: 8 << 10},
		{file: "read.json", jobs: []string{"random_read"}, read: true, blockSize: 4 << 10},
		{file: "write.json", jobs: []string{"sequential_write"}, write: true, blockSize: 1 << 20},
		{file: "fsync.json", jobs: []string{"fsync"}, write: true, blockSize: 8 << 10, sync: true},
		{file: "note-psync.txt", jobs: []string{"database"}, read: true, write: true, blockSize: 8 << 10,
			messages: []string{"note: both iodepth >= 1 and synchronous I/O engine are selected, queue depth will be capped at 1"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			r, err := Parse(readTestdata(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if r.FioVersion != "fio-3.33" {
				t.Errorf("FioVersion = %q", r.FioVersion)
			}
			if r.Time.IsZero() {
				t.Error("Time is zero")
			}
			if len(r.Jobs) != len(tc.jobs) || r.Jobs[0].Name != tc.jobs[0] {
				t.Fatalf("Jobs = %+v, want %q", r.Jobs, tc.jobs)
			}
			if r.RuntimeSeconds < 1.9 || r.RuntimeSeconds > 2.5 {
				t.Errorf("RuntimeSeconds = %v, captured with 2s", r.RuntimeSeconds)
			}
			if r.CPU.User <= 0 || r.CPU.System <= 0 || r.CPU.User+r.CPU.System > 100 {
				t.Errorf("CPU = %+v", r.CPU)
			}
			for _, d := range []struct {
				name string
				want bool
				s    IOStats
			}{{"read", tc.read, r.Read}, {"write", tc.write, r.Write}} {
				if !d.want {
					checkIdle(t, d.name, d.s)
					continue
				}
				checkDirection(t, d.name, d.s)
				if d.s.Bytes != d.s.IOs*tc.blockSize {
					t.Errorf("%s: %d bytes in %d I/Os, want %d-byte blocks", d.name, d.s.Bytes, d.s.IOs, tc.blockSize)
				}
				if d.s != (map[string]IOStats{"read": r.Jobs[0].Read, "write": r.Jobs[0].Write})[d.name] {
					t.Errorf("%s: one job, but the total differs from it", d.name)
				}
			}
			if tc.read && tc.write {
				// Captured with rw_mix_read 70.
				if share := float64(r.Read.IOs) / float64(r.Read.IOs+r.Write.IOs); share < 0.65 || share > 0.75 {
					t.Errorf("read share %.2f, want about 0.70", share)
				}
			}
			if tc.sync {
				l := r.Sync.LatencyMicroseconds
				if r.Sync.Count <= 0 || math.Abs(float64(r.Sync.Count-r.Write.IOs)) > 2 {
					t.Errorf("Sync.Count = %d, want one per write (%d)", r.Sync.Count, r.Write.IOs)
				}
				if !(0 < l.P50 && l.P50 <= l.P95 && l.P95 <= l.P99 && l.P99 <= l.P999 && l.Mean > 0 && l.Max > 0) {
					t.Errorf("sync latency = %+v", l)
				}
			} else if r.Sync != (SyncStats{}) {
				t.Errorf("Sync = %+v, want none", r.Sync)
			}
			if strings.Join(r.Messages, "\n") != strings.Join(tc.messages, "\n") {
				t.Errorf("Messages = %q, want %q", r.Messages, tc.messages)
			}
		})
	}
}

// TestParseStonewall checks the aggregate of three jobs that ran one after
// another, the first with two clones reported as one group.
func TestParseStonewall(t *testing.T) {
	r, err := Parse(readTestdata(t, "stonewall.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Jobs) != 3 {
		t.Fatalf("%d jobs, want 3", len(r.Jobs))
	}
	for i, want := range []string{"random_read", "random_write", "sequential_read"} {
		if j := r.Jobs[i]; j.Name != want || j.GroupID != i {
			t.Errorf("job %d = %q in group %d, want %q in group %d", i, j.Name, j.GroupID, want, i)
		}
	}
	rr, rw, sr := r.Jobs[0], r.Jobs[1], r.Jobs[2]
	checkDirection(t, "random_read", rr.Read)
	checkDirection(t, "random_write", rw.Write)
	checkDirection(t, "sequential_read", sr.Read)
	checkIdle(t, "random_read write", rr.Write)
	checkIdle(t, "random_write read", rw.Read)
	// The clones of random_read are one group: fio's runtime is wall time,
	// not the sum over clones (job_runtime is).
	if rr.RuntimeSeconds > 2.5 {
		t.Errorf("random_read runtime %v s", rr.RuntimeSeconds)
	}

	if got, want := r.RuntimeSeconds, rr.RuntimeSeconds+rw.RuntimeSeconds+sr.RuntimeSeconds; math.Abs(got-want) > 1e-9 {
		t.Errorf("RuntimeSeconds = %v, want the sum %v", got, want)
	}
	// Writes come from one job only: the total is that job.
	if r.Write != rw.Write {
		t.Errorf("Write = %+v, want random_write's %+v", r.Write, rw.Write)
	}
	// Reads come from two jobs run one after the other: I/Os and bytes over
	// their total time.
	ios := rr.Read.IOs + sr.Read.IOs
	secs := rr.Read.RuntimeSeconds + sr.Read.RuntimeSeconds
	if r.Read.IOs != ios || r.Read.Bytes != rr.Read.Bytes+sr.Read.Bytes || r.Read.RuntimeSeconds != secs {
		t.Errorf("Read totals = %+v", r.Read)
	}
	if math.Abs(r.Read.IOPS-float64(ios)/secs) > 1e-6 {
		t.Errorf("Read.IOPS = %v, want %v", r.Read.IOPS, float64(ios)/secs)
	}
	if lo, hi := math.Min(rr.Read.IOPS, sr.Read.IOPS), math.Max(rr.Read.IOPS, sr.Read.IOPS); r.Read.IOPS < lo || r.Read.IOPS > hi {
		t.Errorf("Read.IOPS %v outside the jobs' %v..%v", r.Read.IOPS, lo, hi)
	}
	l, a, b := r.Read.LatencyMicroseconds, rr.Read.LatencyMicroseconds, sr.Read.LatencyMicroseconds
	if l.P99 != math.Max(a.P99, b.P99) || l.Max != math.Max(a.Max, b.Max) || l.P50 != math.Max(a.P50, b.P50) {
		t.Errorf("read latency %+v, want the worst of %+v and %+v", l, a, b)
	}
	if wantMean := (a.Mean*float64(rr.Read.IOs) + b.Mean*float64(sr.Read.IOs)) / float64(ios); math.Abs(l.Mean-wantMean) > 1e-6 {
		t.Errorf("read mean %v, want %v", l.Mean, wantMean)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		want Error
	}{
		{"captured: no directory", readTestdata(t, "error-no-directory.txt"), Error{
			Message: "fio: /data/missing is not a directory\nfio: failed parsing directory=/data/missing"}},
		{"captured: job error with fio's message", readTestdata(t, "error-is-directory.txt"), Error{
			Job: "database", Code: 21, Message: "fio: pid=0, err=21/file:filesetup.c:150, func=unlink, error=Is a directory"}},
		{"job error without fio's message", []byte(`{"jobs":[{"jobname":"a","error":28}]}`), Error{
			Job: "a", Code: 28, Message: "no space left on device (ENOSPC)"}},
		{"unknown errno", []byte(`{"jobs":[{"jobname":"a","error":4242}]}`), Error{Job: "a", Code: 4242}},
		{"second job fails", []byte("{\"jobs\":[{\"jobname\":\"a\"},{\"jobname\":\"b\",\"error\":5}]}\nfio: io_u error on file x: Input/output error: read offset=0\n"), Error{
			Job: "b", Code: 5, Message: "fio: io_u error on file x: Input/output error: read offset=0"}},
		{"fio's message inside its JSON (stderr and stdout in one pod log)", []byte("{\n\"fio version\" : \"fio-3.33\",\nfio: ENOSPC on laying out file, stopping\n\"jobs\" : [{\"jobname\":\"database\",\"error\":28}]\n}\nfio: io_u error on file x: No space left on device: write offset=0\n"), Error{
			Job: "database", Code: 28, Message: "fio: ENOSPC on laying out file, stopping\nfio: io_u error on file x: No space left on device: write offset=0"}},
		{"empty", nil, Error{}},
		{"only spaces", []byte(" \n\t\n"), Error{}},
		{"fio not found", []byte("sh: 1: fio: not found\n"), Error{Message: "sh: 1: fio: not found"}},
		{"truncated JSON", []byte("{\n  \"fio version\" : \"fio-3.33\",\n  \"jobs\" : [\n"), Error{
			Message: "cannot read fio's JSON: unexpected EOF\n{\n\"fio version\" : \"fio-3.33\",\n\"jobs\" : ["}},
		{"no jobs", []byte(`{"fio version":"fio-3.33","jobs":[]}`), Error{Message: "fio reported no jobs"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Parse(tc.in)
			var fe *Error
			if !errors.As(err, &fe) {
				t.Fatalf("Parse = %+v, %v; want an *Error", r, err)
			}
			if *fe != tc.want {
				t.Errorf("error = %#v\nwant %#v", *fe, tc.want)
			}
			if fe.Error() == "" {
				t.Error("empty error text")
			}
		})
	}
}

func TestParseWrongTypes(t *testing.T) {
	in := `{"jobs":[{"jobname":"a","read":{"iops":"many"}}]}`
	_, err := Parse([]byte(in))
	var fe *Error
	if !errors.As(err, &fe) {
		t.Fatalf("Parse = %v, want an *Error", err)
	}
	// The middle is encoding/json's own wording.
	if !strings.HasPrefix(fe.Message, "cannot read fio's JSON: ") || !strings.Contains(fe.Message, "iops") || !strings.HasSuffix(fe.Message, "\n"+in) {
		t.Errorf("Message = %q", fe.Message)
	}
}

func TestErrorText(t *testing.T) {
	for _, tc := range []struct {
		e    Error
		want string
	}{
		{Error{Job: "a", Code: 21, Message: "fio: boom"}, `fio job "a" failed with error 21: fio: boom`},
		{Error{Job: "a", Code: 4242}, `fio job "a" failed with error 4242`},
		{Error{Message: "fio: /x is not a directory"}, "fio failed: fio: /x is not a directory"},
		{Error{}, "fio failed and printed nothing"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("%#v.Error() = %q, want %q", tc.e, got, tc.want)
		}
	}
	long := strings.Repeat("x", 3*maxMessage)
	_, err := Parse([]byte(long))
	if err == nil || len(err.Error()) > maxMessage+100 {
		t.Errorf("a long message is not clipped: %d bytes", len(err.Error()))
	}
}

func TestParseTolerates(t *testing.T) {
	doc := `{"fio version":"fio-3.1","jobs":[{"jobname":"j","read":{"io_bytes":4096000,"bw":2000,"iops":500,` +
		`"runtime":2000,"total_ios":1000,"clat_ns":{"mean":2000,"max":9000,"N":1000,` +
		`"percentile":{"1.000000":10,"50.000000":1000,"95.000000":3000,"99.000000":5000,"99.900000":8000,"99.990000":8500}},` +
		`"lat_ns":{"mean":2100,"max":9100,"N":1000}}}]}`
	for _, tc := range []struct {
		name string
		in   string
		msgs []string
	}{
		{"bare", doc, nil},
		{"warnings before and after", "fio: this platform does not support process shared mutexes\n  note: x\n" + doc + "\nfio: trailing\n", []string{
			"fio: this platform does not support process shared mutexes", "note: x", "fio: trailing"}},
		{"CRLF and indentation", "warn\r\n   " + doc + "\r\n", []string{"warn"}},
		{"a brace line that is not JSON first", "{oops}\n" + doc, []string{"{oops}"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Parse([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(r.Messages, "|") != strings.Join(tc.msgs, "|") {
				t.Errorf("Messages = %q, want %q", r.Messages, tc.msgs)
			}
			// No bw_bytes (fio before 3.x): bw is KiB/s. No lat percentiles:
			// clat's are used.
			want := IOStats{IOPS: 500, BandwidthBytesPerSecond: 2000 * 1024, Bytes: 4096000, IOs: 1000, RuntimeSeconds: 2,
				LatencySource: "clat", LatencyMicroseconds: Latency{Mean: 2, P50: 1, P95: 3, P99: 5, P999: 8, Max: 9}}
			if r.Read != want {
				t.Errorf("Read = %+v\nwant %+v", r.Read, want)
			}
			if r.FioVersion != "fio-3.1" || !r.Time.IsZero() {
				t.Errorf("version %q time %v", r.FioVersion, r.Time)
			}
		})
	}
}

// TestParseConcurrentEntries checks entries of one group (clones fio did not
// group_report) add up.
func TestParseConcurrentEntries(t *testing.T) {
	entry := func(name string, iops, p99, mean float64) string {
		return `{"jobname":"` + name + `","groupid":0,"usr_cpu":10,"sys_cpu":20,"write":{"io_bytes":` + ftoa(iops*2*4096) +
			`,"bw_bytes":` + ftoa(iops*4096) + `,"iops":` + ftoa(iops) + `,"runtime":2000,"total_ios":` + ftoa(iops*2) +
			`,"lat_ns":{"mean":` + ftoa(mean*1000) + `,"max":` + ftoa(p99*2000) + `,"N":` + ftoa(iops*2) +
			`,"percentile":{"50.000000":1000,"95.000000":2000,"99.000000":` + ftoa(p99*1000) + `,"99.900000":` + ftoa(p99*1500) + `}}}}`
	}
	in := `{"jobs":[` + entry("w", 100, 10, 4) + "," + entry("w", 300, 20, 8) + `]}`
	r, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := IOStats{IOPS: 400, BandwidthBytesPerSecond: 400 * 4096, Bytes: 800 * 4096, IOs: 800, RuntimeSeconds: 2,
		LatencySource: "lat", LatencyMicroseconds: Latency{Mean: 7, P50: 1, P95: 2, P99: 20, P999: 30, Max: 40}}
	if r.Write != want {
		t.Errorf("Write = %+v\nwant %+v", r.Write, want)
	}
	if r.RuntimeSeconds != 2 || r.CPU != (CPUPercent{User: 10, System: 20}) {
		t.Errorf("runtime %v cpu %+v", r.RuntimeSeconds, r.CPU)
	}
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// FuzzParse checks Parse never panics and keeps its invariants on any input.
func FuzzParse(f *testing.F) {
	entries, err := os.ReadDir("testdata")
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".json") || strings.HasSuffix(e.Name(), ".txt") {
			f.Add(readTestdata(f, e.Name()))
		}
	}
	f.Add([]byte(`{"jobs":[{"jobname":"a","groupid":1e300,"error":-1e300}]}`))
	f.Add([]byte(`{"jobs":[{"read":{"io_bytes":1e308,"total_ios":1e308,"runtime":-5,"lat_ns":{"N":-3,"percentile":{"x":1}}}},{"read":{"total_ios":1e308}}]}`))
	f.Add([]byte("\n{\n{\"jobs\":null}\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := Parse(in)
		if err != nil {
			var fe *Error
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not an *Error", err)
			}
			if len(fe.Message) > maxMessage+3 {
				t.Fatalf("message of %d bytes", len(fe.Message))
			}
			return
		}
		if len(r.Jobs) == 0 {
			t.Fatal("success without jobs")
		}
		_ = Summary(r)
	})
}
