package fio

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// DefaultProfile is the profile used when the user names none.
const DefaultProfile = "database"

// seed is the database job every profile starts from: 8k random I/O, 70 %
// reads, 16 in flight through libaio, on a 200M file, bypassing the page
// cache, for 60 seconds.
var seed = Job{
	RW:        "randrw",
	BlockSize: "8k",
	RWMixRead: 70,
	IODepth:   16,
	NumJobs:   1,
	Size:      "200M",
	Runtime:   60 * time.Second,
	Direct:    true,
	IOEngine:  "libaio",
}

// profile is one built-in job: its name, what it is in a few words for the attribute's
// description (the seed's settings it changes, or all of them for the seed itself), and its
// changes to seed.
type profile struct {
	name, summary string
	change        func(j *Job)
}

// profiles is the table of built-in profiles, in the order the documentation lists them. The
// names a `profile` attribute accepts and its description are built from it.
var profiles = []profile{
	// database: the seed job, an OLTP-like mix.
	{"database", "8k random I/O, 70 % reads, iodepth 16, libaio, 200M file, 60 s, O_DIRECT", func(*Job) {}},
	// random_read: 4k random reads, 64 in flight (peak read IOPS).
	{"random_read", "4k, iodepth 64", func(j *Job) { j.RW, j.BlockSize, j.IODepth = "randread", "4k", 64 }},
	// random_write: 4k random writes, 64 in flight (peak write IOPS).
	{"random_write", "4k, iodepth 64", func(j *Job) { j.RW, j.BlockSize, j.IODepth = "randwrite", "4k", 64 }},
	// sequential_read: 1M sequential reads, 16 in flight (throughput).
	{"sequential_read", "1M, iodepth 16", func(j *Job) { j.RW, j.BlockSize, j.IODepth = "read", "1M", 16 }},
	// sequential_write: 1M sequential writes, 16 in flight (throughput).
	{"sequential_write", "1M, iodepth 16", func(j *Job) { j.RW, j.BlockSize, j.IODepth = "write", "1M", 16 }},
	// latency: 4k random I/O, half reads and half writes, one at a time, so a single run reports
	// both the read and the write latency of one I/O with no queueing.
	{"latency", "4k random, half reads, iodepth 1", func(j *Job) { j.RW, j.BlockSize, j.RWMixRead, j.IODepth = "randrw", "4k", 50, 1 }},
	// fsync: a database's write-ahead log: 8k sequential buffered writes, each followed by
	// fdatasync(2), one at a time, through plain write(2). The fdatasync latency is the commit
	// latency.
	{"fsync", "8k sequential writes, each followed by fdatasync, iodepth 1, as a database WAL", func(j *Job) {
		j.RW, j.BlockSize, j.IODepth, j.IOEngine, j.Direct, j.Fsync = "write", "8k", 1, "sync", false, 1
	}},
}

// ProfileNames returns the names of the built-in profiles, sorted.
func ProfileNames() []string {
	names := make([]string, 0, len(profiles))
	for _, p := range profiles {
		names = append(names, p.name)
	}
	sort.Strings(names)
	return names
}

// ProfilesMarkdown describes the built-in profiles for an attribute's description, in the
// table's order: "`database` (...), `random_read` and `random_write` (...) ... and `fsync`
// (...)". Neighbours with the same summary share it.
func ProfilesMarkdown() string {
	var groups []string
	for i := 0; i < len(profiles); {
		j := i + 1
		for j < len(profiles) && profiles[j].summary == profiles[i].summary {
			j++
		}
		names := make([]string, 0, j-i)
		for _, p := range profiles[i:j] {
			names = append(names, "`"+p.name+"`")
		}
		groups = append(groups, joinAnd(names)+" ("+profiles[i].summary+")")
		i = j
	}
	return joinAnd(groups)
}

// joinAnd joins items as a sentence does: "a", "a and b", "a, b and c".
func joinAnd(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

func lookupProfile(name string) (profile, bool) {
	for _, p := range profiles {
		if p.name == name {
			return p, true
		}
	}
	return profile{}, false
}

// Profile returns the spec of a built-in profile: one job named after the
// profile. The result is valid; callers apply overrides with [Spec.Apply].
func Profile(name string) (Spec, error) {
	p, ok := lookupProfile(name)
	if !ok {
		return Spec{}, fmt.Errorf("unknown fio profile %q: must be one of %s", name, strings.Join(ProfileNames(), ", "))
	}
	j := seed
	j.Name = name
	p.change(&j)
	return Spec{Jobs: []Job{j}}, nil
}
