package fio

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestProfileNames(t *testing.T) {
	want := []string{"database", "fsync", "latency", "random_read", "random_write", "sequential_read", "sequential_write"}
	if got := ProfileNames(); !slices.Equal(got, want) {
		t.Errorf("ProfileNames() = %q, want %q", got, want)
	}
	if !slices.Contains(ProfileNames(), DefaultProfile) {
		t.Errorf("DefaultProfile %q is not a profile", DefaultProfile)
	}
}

func TestProfiles(t *testing.T) {
	minute := 60 * time.Second
	for _, tc := range []struct {
		name string
		want Job
	}{
		{"database", Job{Name: "database", RW: "randrw", BlockSize: "8k", RWMixRead: 70, IODepth: 16, NumJobs: 1,
			Size: "200M", Runtime: minute, Direct: true, IOEngine: "libaio"}},
		{"random_read", Job{Name: "random_read", RW: "randread", BlockSize: "4k", RWMixRead: 70, IODepth: 64, NumJobs: 1,
			Size: "200M", Runtime: minute, Direct: true, IOEngine: "libaio"}},
		{"random_write", Job{Name: "random_write", RW: "randwrite", BlockSize: "4k", RWMixRead: 70, IODepth: 64, NumJobs: 1,
			Size: "200M", Runtime: minute, Direct: true, IOEngine: "libaio"}},
		{"sequential_read", Job{Name: "sequential_read", RW: "read", BlockSize: "1M", RWMixRead: 70, IODepth: 16, NumJobs: 1,
			Size: "200M", Runtime: minute, Direct: true, IOEngine: "libaio"}},
		{"sequential_write", Job{Name: "sequential_write", RW: "write", BlockSize: "1M", RWMixRead: 70, IODepth: 16, NumJobs: 1,
			Size: "200M", Runtime: minute, Direct: true, IOEngine: "libaio"}},
		{"latency", Job{Name: "latency", RW: "randrw", BlockSize: "4k", RWMixRead: 50, IODepth: 1, NumJobs: 1,
			Size: "200M", Runtime: minute, Direct: true, IOEngine: "libaio"}},
		{"fsync", Job{Name: "fsync", RW: "write", BlockSize: "8k", RWMixRead: 70, IODepth: 1, NumJobs: 1,
			Size: "200M", Runtime: minute, Direct: false, IOEngine: "sync", Fsync: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustProfile(t, tc.name)
			if len(s.Jobs) != 1 || s.Jobs[0] != tc.want {
				t.Fatalf("Profile(%q) = %+v\nwant one job %+v", tc.name, s, tc.want)
			}
			if err := s.Validate(); err != nil {
				t.Errorf("profile %q is invalid: %v", tc.name, err)
			}
			// Profiles are copies: changing one does not change the next.
			s.Jobs[0].IODepth = 999
			if again := mustProfile(t, tc.name); again.Jobs[0].IODepth == 999 {
				t.Error("Profile returned shared state")
			}
		})
	}
	if len(ProfileNames()) != 7 {
		t.Errorf("a profile is not covered by this test: %q", ProfileNames())
	}
}

func TestProfileUnknown(t *testing.T) {
	_, err := Profile("oltp")
	if err == nil {
		t.Fatal("Profile(oltp) = nil error")
	}
	want := `unknown fio profile "oltp": must be one of database, fsync, latency, random_read, random_write, sequential_read, sequential_write`
	if err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	if !strings.Contains(err.Error(), DefaultProfile) {
		t.Error("error does not list the default profile")
	}
}

// TestProfilesMarkdown: the description of the `profile` attribute names every profile, in the
// table's order, neighbours with the same summary together.
func TestProfilesMarkdown(t *testing.T) {
	want := "`database` (8k random I/O, 70 % reads, iodepth 16, libaio, 200M file, 60 s, O_DIRECT), " +
		"`random_read` and `random_write` (4k, iodepth 64), `sequential_read` and `sequential_write` (1M, iodepth 16), " +
		"`latency` (4k random, half reads, iodepth 1) and `fsync` (8k sequential writes, each followed by fdatasync, iodepth 1, as a database WAL)"
	if got := ProfilesMarkdown(); got != want {
		t.Errorf("ProfilesMarkdown() =\n%s\nwant\n%s", got, want)
	}
	for _, p := range profiles {
		if p.summary == "" {
			t.Errorf("profile %q has no summary", p.name)
		}
		if !strings.Contains(ProfilesMarkdown(), "`"+p.name+"`") {
			t.Errorf("profile %q is not in the description", p.name)
		}
	}
	for _, tc := range []struct {
		in   []string
		want string
	}{{nil, ""}, {[]string{"a"}, "a"}, {[]string{"a", "b"}, "a and b"}, {[]string{"a", "b", "c"}, "a, b and c"}} {
		if got := joinAnd(tc.in); got != tc.want {
			t.Errorf("joinAnd(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
