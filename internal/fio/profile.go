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

// profiles holds each profile's differences from seed.
var profiles = map[string]func(j *Job){
	// database: the seed job, an OLTP-like mix.
	"database": func(*Job) {},
	// random_read: 4k random reads, 64 in flight (peak read IOPS).
	"random_read": func(j *Job) { j.RW, j.BlockSize, j.IODepth = "randread", "4k", 64 },
	// random_write: 4k random writes, 64 in flight (peak write IOPS).
	"random_write": func(j *Job) { j.RW, j.BlockSize, j.IODepth = "randwrite", "4k", 64 },
	// sequential_read: 1M sequential reads, 16 in flight (throughput).
	"sequential_read": func(j *Job) { j.RW, j.BlockSize, j.IODepth = "read", "1M", 16 },
	// sequential_write: 1M sequential writes, 16 in flight (throughput).
	"sequential_write": func(j *Job) { j.RW, j.BlockSize, j.IODepth = "write", "1M", 16 },
	// latency: 4k random I/O, half reads and half writes, one at a time, so a
	// single run reports both the read and the write latency of one I/O with
	// no queueing.
	"latency": func(j *Job) { j.RW, j.BlockSize, j.RWMixRead, j.IODepth = "randrw", "4k", 50, 1 },
	// fsync: a database's write-ahead log: 8k sequential buffered writes, each
	// followed by fdatasync(2), one at a time, through plain write(2). The
	// fdatasync latency is the commit latency.
	"fsync": func(j *Job) {
		j.RW, j.BlockSize, j.IODepth, j.IOEngine, j.Direct, j.Fsync = "write", "8k", 1, "sync", false, 1
	},
}

// ProfileNames returns the names of the built-in profiles, sorted.
func ProfileNames() []string {
	names := make([]string, 0, len(profiles))
	for name := range profiles {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// Profile returns the spec of a built-in profile: one job named after the
// profile. The result is valid; callers apply overrides with [Spec.Apply].
func Profile(name string) (Spec, error) {
	change, ok := profiles[name]
	if !ok {
		return Spec{}, fmt.Errorf("unknown fio profile %q: must be one of %s", name, strings.Join(ProfileNames(), ", "))
	}
	j := seed
	j.Name = name
	change(&j)
	return Spec{Jobs: []Job{j}}, nil
}
