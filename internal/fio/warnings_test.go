package fio

import (
	"strings"
	"testing"
)

func TestPageCacheWarning(t *testing.T) {
	const gib = 1 << 30
	for _, tc := range []struct {
		name    string
		profile string
		o       Override
		mem     int64
		want    string // substring; "" for no warning
	}{
		{"direct", "database", Override{}, gib, ""},
		{"buffered small file", "database", Override{Direct: boolp(false)}, gib,
			`fio job "database" (200M) runs with direct=false on files that fit in 1G of memory`},
		{"buffered file larger than memory", "random_read", Override{Direct: boolp(false), Size: strp("2G")}, gib, ""},
		{"clones add up past memory", "random_read", Override{Direct: boolp(false), Size: strp("600M"), NumJobs: intp(2)}, gib, ""},
		{"clones fit", "random_read", Override{Direct: boolp(false), Size: strp("600M"), NumJobs: intp(2)}, 2 * gib, "(1200M)"},
		{"memory unknown", "sequential_write", Override{Direct: boolp(false), Size: strp("100G")}, 0, "an unknown amount of memory"},
		{"buffered writes synced each time", "fsync", Override{}, gib, ""},
		{"buffered writes synced every 8", "fsync", Override{Fsync: intp(8)}, gib, `"fsync"`},
		{"buffered writes never synced", "fsync", Override{Fsync: intp(0)}, gib, `"fsync"`},
		{"buffered reads with synced writes", "fsync", Override{RW: strp("randrw")}, gib, `"fsync"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := PageCacheWarning(mustProfile(t, tc.profile).Apply(tc.o), tc.mem)
			switch {
			case tc.want == "" && got != "":
				t.Errorf("got %q, want none", got)
			case tc.want != "" && !strings.Contains(got, tc.want):
				t.Errorf("got %q, want it to contain %q", got, tc.want)
			}
		})
	}
}

func TestWarnings(t *testing.T) {
	if w := Warnings(mustProfile(t, "database"), 1<<30); w != nil {
		t.Errorf("database profile: %q", w)
	}
	s := mustProfile(t, "database").Apply(Override{IOEngine: strp("psync"), Direct: boolp(false)})
	s.Jobs = append(s.Jobs, mustProfile(t, "random_read").Apply(Override{Fsync: intp(1)}).Jobs...)
	s.Jobs[1].Name = "reader"
	got := Warnings(s, 1<<30)
	want := []string{
		`fio job "database" (200M) runs with direct=false`,
		`fio job "database": io_depth 16 has no effect with the synchronous ioengine "psync"`,
		`fio job "reader": fsync 1 has no effect, since rw "randread" never writes.`,
	}
	if len(got) != len(want) {
		t.Fatalf("Warnings = %q, want %d", got, len(want))
	}
	for i := range want {
		if !strings.Contains(got[i], want[i]) {
			t.Errorf("warning %d = %q, want it to contain %q", i, got[i], want[i])
		}
	}
}
