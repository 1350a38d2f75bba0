package fio

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"0", 0}, {"512", 512}, {"4k", 4096}, {"4K", 4096}, {"4KiB", 4096}, {"4kib", 4096}, {"4KB", 4096},
		{"4ki", 4096}, {"200M", 200 << 20}, {"200m", 200 << 20}, {"1G", 1 << 30}, {"2T", 2 << 40},
		{"1P", 1 << 50}, {"512B", 512}, {"16384k", 16 << 20},
	} {
		got, err := ParseSize(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"", "k", "4q", "4 k", " 4k", "4k ", "-4k", "4.5M", "4kk", "4iB", "4i", "4MBs", "1e3",
		"99999999999999999999", "9223372036854775807k", "8192P", "10%", "4k,8k", "4k-8k", "0x10"} {
		if n, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", in, n)
		}
	}
}

func TestFormatSize(t *testing.T) {
	for _, tc := range []struct {
		in   int64
		want string
	}{
		{0, "0"}, {1000, "1000"}, {512, "512"}, {1536, "1536"}, {4096, "4k"}, {8192, "8k"}, {1 << 20, "1M"},
		{200 << 20, "200M"}, {1536 << 10, "1536k"}, {1 << 30, "1G"}, {3 << 40, "3T"}, {1 << 50, "1024T"},
	} {
		if got := FormatSize(tc.in); got != tc.want {
			t.Errorf("FormatSize(%d) = %q, want %q", tc.in, got, tc.want)
		}
		if n, err := ParseSize(FormatSize(tc.in)); err != nil || n != tc.in {
			t.Errorf("ParseSize(FormatSize(%d)) = %d, %v", tc.in, n, err)
		}
	}
}

func TestValidators(t *testing.T) {
	for _, tc := range []struct {
		name    string
		err     error
		wantErr string // "" for valid
	}{
		{"size 200M", ValidSize("200M"), ""},
		{"size 1M", ValidSize("1M"), ""},
		{"size 16T", ValidSize("16T"), ""},
		{"size 1023k", ValidSize("1023k"), "must be between 1M and 16T"},
		{"size 17T", ValidSize("17T"), "must be between 1M and 16T"},
		{"size bad", ValidSize("lots"), "is not a size"},
		{"size percent", ValidSize("50%"), "is not a size"},
		{"bs 4k", ValidBlockSize("4k"), ""},
		{"bs 512", ValidBlockSize("512"), ""},
		{"bs 12k", ValidBlockSize("12k"), ""},
		{"bs 64M", ValidBlockSize("64M"), ""},
		{"bs 256", ValidBlockSize("256"), "must be between 512 and 64M"},
		{"bs 128M", ValidBlockSize("128M"), "must be between 512 and 64M"},
		{"bs 1000", ValidBlockSize("1000"), "must be a multiple of 512 bytes"},
		{"bs pair", ValidBlockSize("4k,8k"), "is not a size"},
		{"bs empty", ValidBlockSize(""), "is not a size"},
		{"rw randrw", ValidRW("randrw"), ""},
		{"rw trim", ValidRW("trim"), "must be one of read, write, randread, randwrite, rw, readwrite, randrw"},
		{"rw case", ValidRW("RandRead"), "must be one of"},
		{"engine io_uring", ValidIOEngine("io_uring"), ""},
		{"engine windowsaio", ValidIOEngine("windowsaio"), "must be one of libaio, psync, sync, io_uring, posixaio, mmap"},
		{"mix 0", ValidRWMixRead(0), ""},
		{"mix 100", ValidRWMixRead(100), ""},
		{"mix 101", ValidRWMixRead(101), "must be between 0 and 100"},
		{"mix -1", ValidRWMixRead(-1), "must be between 0 and 100"},
		{"depth 1", ValidIODepth(1), ""},
		{"depth 1024", ValidIODepth(1024), ""},
		{"depth 0", ValidIODepth(0), "must be between 1 and 1024"},
		{"depth 1025", ValidIODepth(1025), "must be between 1 and 1024"},
		{"jobs 64", ValidNumJobs(64), ""},
		{"jobs 65", ValidNumJobs(65), "must be between 1 and 64"},
		{"jobs 0", ValidNumJobs(0), "must be between 1 and 64"},
		{"fsync 0", ValidFsync(0), ""},
		{"fsync -1", ValidFsync(-1), "must be between 0 and"},
		{"runtime 1s", ValidRuntime(time.Second), ""},
		{"runtime 1h", ValidRuntime(time.Hour), ""},
		{"runtime 0", ValidRuntime(0), "must be between 1s and 1h"},
		{"runtime 61m", ValidRuntime(61 * time.Minute), "must be between 1s and 1h"},
		{"runtime 1.5s", ValidRuntime(1500 * time.Millisecond), "whole number of seconds"},
		{"ramp 0", ValidRampTime(0), ""},
		{"ramp 10m", ValidRampTime(10 * time.Minute), ""},
		{"ramp 11m", ValidRampTime(11 * time.Minute), "must be between 0s and 10m"},
		{"ramp -1s", ValidRampTime(-time.Second), "must be between 0s and 10m"},
		{"name ok", ValidJobName("random_read-2.a"), ""},
		{"name empty", ValidJobName(""), "must not be empty"},
		{"name global", ValidJobName("Global"), "reserved"},
		{"name space", ValidJobName("a b"), "only letters, digits"},
		{"name bracket", ValidJobName("a]"), "only letters, digits"},
		{"name dash first", ValidJobName("-a"), "must start with a letter or a digit"},
		{"name long", ValidJobName(strings.Repeat("a", 65)), "at most 64"},
		{"dir ok", ValidDirectory("/var/lib/clusterstorage/bench 1"), ""},
		{"dir relative", ValidDirectory("data"), "absolute path"},
		{"dir colon", ValidDirectory("/mnt/a:b"), `not contain ':'`},
		{"dir dollar", ValidDirectory("/mnt/${HOME}"), `not contain '$'`},
		{"dir newline", ValidDirectory("/mnt/a\nb"), `not contain '\n'`},
		{"dir trailing space", ValidDirectory("/mnt/a "), "spaces"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			switch {
			case tc.wantErr == "" && tc.err != nil:
				t.Errorf("got error %q, want none", tc.err)
			case tc.wantErr != "" && tc.err == nil:
				t.Errorf("got no error, want %q", tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(tc.err.Error(), tc.wantErr):
				t.Errorf("got error %q, want it to contain %q", tc.err, tc.wantErr)
			}
		})
	}
}

func TestSpecValidate(t *testing.T) {
	base := func(t *testing.T) Spec { return mustProfile(t, "database") }
	for _, tc := range []struct {
		name   string
		change func(s *Spec)
		want   []string // substrings of the error; none for valid
	}{
		{"profile as is", func(*Spec) {}, nil},
		{"no jobs", func(s *Spec) { s.Jobs = nil }, []string{"the spec has no jobs"}},
		{"too many jobs", func(s *Spec) {
			for i := 0; i < MaxJobs; i++ {
				j := s.Jobs[0]
				j.Name = fmt.Sprint("j", i)
				s.Jobs = append(s.Jobs, j)
			}
		}, []string{"at most 16"}},
		{"duplicate names", func(s *Spec) { s.Jobs = append(s.Jobs, s.Jobs[0]) }, []string{`job 2: name "database" is used by an earlier job`}},
		{"every field wrong", func(s *Spec) {
			s.Jobs[0] = Job{Name: "x y", RW: "trim", BlockSize: "4q", RWMixRead: 101, IODepth: 0, NumJobs: 65,
				Size: "1k", Runtime: 0, RampTime: -time.Second, IOEngine: "spdk", Fsync: -1}
		}, []string{
			`job name "x y": must contain only letters`,
			`job "x y": rw "trim": must be one of`,
			`job "x y": block_size "4q": is not a size`,
			`job "x y": rw_mix_read 101: must be between 0 and 100`,
			`job "x y": io_depth 0: must be between 1 and 1024`,
			`job "x y": num_jobs 65: must be between 1 and 64`,
			`job "x y": size "1k": must be between 1M and 16T`,
			`job "x y": runtime 0s: must be between 1s and 1h`,
			`job "x y": ramp_time -1s: must be between 0s and 10m`,
			`job "x y": ioengine "spdk": must be one of`,
			`job "x y": fsync -1: must be between 0 and`,
		}},
		{"block larger than size", func(s *Spec) { s.Jobs[0].BlockSize, s.Jobs[0].Size = "64M", "2M" },
			[]string{`job "database": block_size "64M" is larger than size "2M"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := base(t)
			tc.change(&s)
			err := s.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q\nwant it to contain %q", err, w)
				}
			}
		})
	}
}

func TestApply(t *testing.T) {
	s := mustProfile(t, "database")
	s.Jobs = append(s.Jobs, mustProfile(t, "fsync").Jobs...)
	before := Hash(s)

	o := Override{
		BlockSize: strp("16k"), RW: strp("randread"), RWMixRead: intp(0), IODepth: intp(4), NumJobs: intp(3),
		Size: strp("1G"), Runtime: durp(10 * time.Second), RampTime: durp(2 * time.Second), Direct: boolp(false),
		IOEngine: strp("io_uring"), Fsync: intp(0),
	}
	got := s.Apply(o)
	for _, j := range got.Jobs {
		want := Job{Name: j.Name, BlockSize: "16k", RW: "randread", RWMixRead: 0, IODepth: 4, NumJobs: 3, Size: "1G",
			Runtime: 10 * time.Second, RampTime: 2 * time.Second, Direct: false, IOEngine: "io_uring", Fsync: 0}
		if j != want {
			t.Errorf("job %q after Apply = %+v\nwant %+v", j.Name, j, want)
		}
	}
	if Hash(s) != before {
		t.Error("Apply changed the spec it was called on")
	}
	if err := got.Validate(); err != nil {
		t.Errorf("overridden spec: %v", err)
	}

	// An empty override keeps everything.
	if same := s.Apply(Override{}); Hash(same) != before || same.Jobs[1] != s.Jobs[1] {
		t.Errorf("Apply(Override{}) changed the spec: %+v", same)
	}
	// A partial override keeps the rest.
	partial := s.Apply(Override{IODepth: intp(32)})
	if j := partial.Jobs[0]; j.IODepth != 32 || j.BlockSize != "8k" || j.RW != "randrw" || !j.Direct {
		t.Errorf("partial override: %+v", j)
	}
}
