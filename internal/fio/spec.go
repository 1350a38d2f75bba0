package fio

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Job is one fio job section: one workload, run by NumJobs clones at once.
type Job struct {
	// Name is the fio job name: letters, digits, '_', '.' and '-', at most 64
	// characters, unique within a Spec. It is part of the file names fio creates.
	Name string
	// RW is fio's rw: read, write, randread, randwrite, rw, readwrite or randrw.
	RW string
	// BlockSize is fio's bs, e.g. "4k" or "1M".
	BlockSize string
	// RWMixRead is the percentage of reads in a mixed workload (rw, readwrite,
	// randrw); it is not rendered for the other modes.
	RWMixRead int
	// IODepth is the number of I/Os kept in flight per clone (asynchronous
	// engines only; fio caps it at 1 for synchronous ones).
	IODepth int
	// NumJobs is the number of clones running this job at the same time, each
	// on its own file.
	NumJobs int
	// Size is the size of each clone's file, e.g. "200M".
	Size string
	// Runtime is how long the job measures, in whole seconds.
	Runtime time.Duration
	// RampTime is how long the job runs before it starts measuring, in whole
	// seconds; 0 for none.
	RampTime time.Duration
	// Direct makes fio bypass the page cache (O_DIRECT).
	Direct bool
	// IOEngine is fio's ioengine: libaio, psync, sync, io_uring, posixaio or mmap.
	IOEngine string
	// Fsync is the number of writes between two fdatasync(2) calls, rendered
	// as fio's fdatasync=N; 0 never syncs.
	Fsync int
}

// Spec is a whole fio run: its jobs run one after another, in order.
type Spec struct {
	Jobs []Job
}

// Override holds the knobs a user may change on a profile; nil keeps the
// profile's value. Field names follow the data source's attributes.
type Override struct {
	BlockSize *string
	RW        *string
	RWMixRead *int
	IODepth   *int
	NumJobs   *int
	Size      *string
	Runtime   *time.Duration
	RampTime  *time.Duration
	Direct    *bool
	IOEngine  *string
	Fsync     *int
}

// Apply returns a copy of s with every non-nil field of o set on every job.
// s itself is not changed.
func (s Spec) Apply(o Override) Spec {
	jobs := make([]Job, len(s.Jobs))
	for i, j := range s.Jobs {
		jobs[i] = j.Apply(o)
	}
	return Spec{Jobs: jobs}
}

// Apply returns a copy of j with every non-nil field of o set.
func (j Job) Apply(o Override) Job {
	if o.BlockSize != nil {
		j.BlockSize = *o.BlockSize
	}
	if o.RW != nil {
		j.RW = *o.RW
	}
	if o.RWMixRead != nil {
		j.RWMixRead = *o.RWMixRead
	}
	if o.IODepth != nil {
		j.IODepth = *o.IODepth
	}
	if o.NumJobs != nil {
		j.NumJobs = *o.NumJobs
	}
	if o.Size != nil {
		j.Size = *o.Size
	}
	if o.Runtime != nil {
		j.Runtime = *o.Runtime
	}
	if o.RampTime != nil {
		j.RampTime = *o.RampTime
	}
	if o.Direct != nil {
		j.Direct = *o.Direct
	}
	if o.IOEngine != nil {
		j.IOEngine = *o.IOEngine
	}
	if o.Fsync != nil {
		j.Fsync = *o.Fsync
	}
	return j
}

// Limits enforced by Validate and the Valid* helpers.
const (
	MinBlockSize = 512      // bytes; block sizes are whole multiples of it
	MaxBlockSize = 64 << 20 // 64 MiB
	MinSize      = 1 << 20  // 1 MiB per file
	MaxSize      = 16 << 40 // 16 TiB per file
	MinRuntime   = time.Second
	MaxRuntime   = time.Hour
	MaxRampTime  = 10 * time.Minute
	MinIODepth   = 1
	MaxIODepth   = 1024
	MinNumJobs   = 1
	MaxNumJobs   = 64
	MaxFsync     = 1 << 20 // writes between fdatasync calls
	MaxJobs      = 16      // job sections in one Spec
)

// RWModes lists the accepted values of Job.RW.
var RWModes = []string{"read", "write", "randread", "randwrite", "rw", "readwrite", "randrw"}

// IOEngines lists the accepted values of Job.IOEngine.
var IOEngines = []string{"libaio", "psync", "sync", "io_uring", "posixaio", "mmap"}

// Validate reports every problem of the spec at once (errors.Join); each
// message names the job and the attribute, e.g.
// `job "database": block_size "8q": ...`.
func (s Spec) Validate() error {
	if len(s.Jobs) == 0 {
		return errors.New("the spec has no jobs")
	}
	if len(s.Jobs) > MaxJobs {
		return fmt.Errorf("the spec has %d jobs; at most %d are allowed", len(s.Jobs), MaxJobs)
	}
	var errs []error
	seen := map[string]bool{}
	for i, j := range s.Jobs {
		if err := j.Validate(); err != nil {
			errs = append(errs, err)
		}
		if seen[j.Name] {
			errs = append(errs, fmt.Errorf("job %d: name %q is used by an earlier job; job names must be unique", i+1, j.Name))
		}
		seen[j.Name] = true
	}
	return errors.Join(errs...)
}

// Validate reports every problem of the job at once (errors.Join).
func (j Job) Validate() error {
	var errs []error
	add := func(attr string, value any, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("job %q: %s %v: %w", j.Name, attr, value, err))
		}
	}
	if err := ValidJobName(j.Name); err != nil {
		errs = append(errs, fmt.Errorf("job name %q: %w", j.Name, err))
	}
	add("rw", fmt.Sprintf("%q", j.RW), ValidRW(j.RW))
	add("block_size", fmt.Sprintf("%q", j.BlockSize), ValidBlockSize(j.BlockSize))
	add("rw_mix_read", j.RWMixRead, ValidRWMixRead(j.RWMixRead))
	add("io_depth", j.IODepth, ValidIODepth(j.IODepth))
	add("num_jobs", j.NumJobs, ValidNumJobs(j.NumJobs))
	add("size", fmt.Sprintf("%q", j.Size), ValidSize(j.Size))
	add("runtime", j.Runtime, ValidRuntime(j.Runtime))
	add("ramp_time", j.RampTime, ValidRampTime(j.RampTime))
	add("ioengine", fmt.Sprintf("%q", j.IOEngine), ValidIOEngine(j.IOEngine))
	add("fsync", j.Fsync, ValidFsync(j.Fsync))
	bs, bsErr := ParseSize(j.BlockSize)
	size, sizeErr := ParseSize(j.Size)
	if bsErr == nil && sizeErr == nil {
		if bs > size {
			errs = append(errs, fmt.Errorf("job %q: block_size %q is larger than size %q", j.Name, j.BlockSize, j.Size))
		}
	}
	return errors.Join(errs...)
}

// ValidJobName checks a job name: 1 to 64 of letters, digits, '_', '.' and
// '-', starting with a letter or digit, and not "global".
func ValidJobName(name string) error {
	if name == "" {
		return errors.New("must not be empty")
	}
	if len(name) > 64 {
		return errors.New("must be at most 64 characters")
	}
	if strings.EqualFold(name, "global") {
		return errors.New(`"global" is reserved by fio`)
	}
	for i, r := range name {
		alnum := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
		if i == 0 && !alnum {
			return errors.New("must start with a letter or a digit")
		}
		if !alnum && r != '_' && r != '.' && r != '-' {
			return fmt.Errorf("must contain only letters, digits, '_', '.' and '-', not %q", r)
		}
	}
	return nil
}

func oneOf(v string, allowed []string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return fmt.Errorf("must be one of %s", strings.Join(allowed, ", "))
}

// ValidRW checks fio's rw: one of RWModes.
func ValidRW(rw string) error { return oneOf(rw, RWModes) }

// ValidIOEngine checks fio's ioengine: one of IOEngines.
func ValidIOEngine(engine string) error { return oneOf(engine, IOEngines) }

// ValidRWMixRead checks a read percentage: 0 to 100.
func ValidRWMixRead(percent int) error {
	if percent < 0 || percent > 100 {
		return errors.New("must be between 0 and 100")
	}
	return nil
}

func intRange(v, lo, hi int) error {
	if v < lo || v > hi {
		return fmt.Errorf("must be between %d and %d", lo, hi)
	}
	return nil
}

// ValidIODepth checks an I/O depth: MinIODepth to MaxIODepth.
func ValidIODepth(depth int) error { return intRange(depth, MinIODepth, MaxIODepth) }

// ValidNumJobs checks a number of clones: MinNumJobs to MaxNumJobs.
func ValidNumJobs(n int) error { return intRange(n, MinNumJobs, MaxNumJobs) }

// ValidFsync checks the number of writes between fdatasync calls: 0 (never)
// to MaxFsync.
func ValidFsync(n int) error { return intRange(n, 0, MaxFsync) }

// ValidRuntime checks a runtime: whole seconds from MinRuntime to MaxRuntime.
func ValidRuntime(d time.Duration) error {
	if d%time.Second != 0 {
		return errors.New("must be a whole number of seconds")
	}
	if d < MinRuntime || d > MaxRuntime {
		return fmt.Errorf("must be between %s and %s", durationText(MinRuntime), durationText(MaxRuntime))
	}
	return nil
}

// ValidRampTime checks a ramp time: whole seconds from 0 to MaxRampTime.
func ValidRampTime(d time.Duration) error {
	if d%time.Second != 0 {
		return errors.New("must be a whole number of seconds")
	}
	if d < 0 || d > MaxRampTime {
		return fmt.Errorf("must be between 0s and %s", durationText(MaxRampTime))
	}
	return nil
}

// durationText writes a limit the way a user would: 1h, 10m, 90s.
func durationText(d time.Duration) string {
	switch {
	case d != 0 && d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d != 0 && d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return fmt.Sprintf("%gs", d.Seconds())
}

// ValidSize checks a file size in fio's syntax (see the package docs), from
// MinSize to MaxSize, e.g. "200M", "1G", "16384k".
func ValidSize(s string) error {
	n, err := ParseSize(s)
	if err != nil {
		return err
	}
	if n < MinSize || n > MaxSize {
		return fmt.Errorf("must be between %s and %s", FormatSize(MinSize), FormatSize(MaxSize))
	}
	return nil
}

// ValidBlockSize checks a block size in fio's syntax: a single size (no
// ranges or read,write pairs) that is a multiple of 512 bytes, from
// MinBlockSize to MaxBlockSize, e.g. "4k", "8k", "1M".
func ValidBlockSize(s string) error {
	n, err := ParseSize(s)
	if err != nil {
		return err
	}
	if n < MinBlockSize || n > MaxBlockSize {
		return fmt.Errorf("must be between %s and %s", FormatSize(MinBlockSize), FormatSize(MaxBlockSize))
	}
	if n%MinBlockSize != 0 {
		return errors.New("must be a multiple of 512 bytes")
	}
	return nil
}

// ValidDirectory checks the directory fio works in: an absolute path made of
// letters, digits, spaces and "/._-+@~,=" (fio gives ':' and '\' a meaning
// in directory names, and job files give one to '$', ';' and '#'), without
// leading or trailing spaces, at most 4096 bytes.
func ValidDirectory(dir string) error {
	if !strings.HasPrefix(dir, "/") {
		return errors.New("must be an absolute path")
	}
	if len(dir) > 4096 {
		return errors.New("must be at most 4096 bytes")
	}
	if strings.TrimSpace(dir) != dir {
		return errors.New("must not start or end with spaces")
	}
	for _, r := range dir {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+@~,= ", r)
		if !ok {
			return fmt.Errorf("must not contain %q: only letters, digits, spaces and /._-+@~,= are accepted", r)
		}
	}
	return nil
}

// ParseSize returns the number of bytes of a size in fio's syntax: a whole
// number with an optional k, M, G, T or P (any case) optionally followed by
// "i", "iB" or "B", or a lone "B"; all prefixes are powers of 1024, as with
// fio's default kb_base=1024.
func ParseSize(s string) (int64, error) {
	bad := fmt.Errorf("is not a size: use a whole number with an optional k, M, G or T suffix, e.g. 4k, 200M, 1G")
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 || i > 19 {
		return 0, bad
	}
	var n int64
	for _, c := range s[:i] {
		n = n*10 + int64(c-'0')
		if n < 0 {
			return 0, bad
		}
	}
	suffix := strings.ToLower(s[i:])
	shift := 0
	if suffix != "" {
		switch suffix[0] {
		case 'k':
			shift = 10
		case 'm':
			shift = 20
		case 'g':
			shift = 30
		case 't':
			shift = 40
		case 'p':
			shift = 50
		}
		if shift != 0 {
			suffix = suffix[1:]
		}
		switch {
		case suffix == "":
		case suffix == "b":
		case shift != 0 && (suffix == "i" || suffix == "ib"):
		default:
			return 0, bad
		}
	}
	if shift > 0 && n > (1<<62)>>shift {
		return 0, errors.New("is too large")
	}
	return n << shift, nil
}

// FormatSize writes a byte count in the canonical form used in rendering: the
// largest of T, G, M and k that divides it exactly, e.g. 209715200 -> "200M",
// 8192 -> "8k", 1000 -> "1000".
func FormatSize(n int64) string {
	for _, u := range []struct {
		shift  uint
		suffix string
	}{{40, "T"}, {30, "G"}, {20, "M"}, {10, "k"}} {
		if n != 0 && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d%s", n>>u.shift, u.suffix)
		}
	}
	return fmt.Sprintf("%d", n)
}

// mixed reports whether an rw mode both reads and writes.
func mixed(rw string) bool { return rw == "rw" || rw == "readwrite" || rw == "randrw" }

// reads reports whether the job issues reads.
func (j Job) reads() bool {
	if mixed(j.RW) {
		return j.RWMixRead > 0
	}
	return j.RW == "read" || j.RW == "randread"
}

// writes reports whether the job issues writes.
func (j Job) writes() bool {
	if mixed(j.RW) {
		return j.RWMixRead < 100
	}
	return j.RW == "write" || j.RW == "randwrite"
}
