package fio

import (
	"fmt"
	"strings"
)

// syncEngines are the engines that have one I/O in flight at a time.
var syncEngines = map[string]bool{"psync": true, "sync": true, "mmap": true}

// fileBytes returns the bytes of all the files one job works on (its size
// times its clones), or 0 if its size does not parse.
func (j Job) fileBytes() int64 {
	n, err := ParseSize(j.Size)
	if err != nil {
		return 0
	}
	return n * int64(j.NumJobs)
}

// PageCacheWarning returns a warning when a job of s goes through the page
// cache (direct=false) with files small enough to be served from memory, so
// its numbers would describe RAM rather than storage; "" otherwise. memBytes
// is the memory of the machine fio runs on (or the pod's memory limit); 0 or
// less means unknown, and then any buffered job that reads, or writes without
// syncing, gets a warning. Writes that fdatasync after every write (fsync=1)
// reach storage, so they are not warned about.
func PageCacheWarning(s Spec, memBytes int64) string {
	var jobs []string
	for _, j := range s.Jobs {
		if j.Direct {
			continue
		}
		cached := j.reads() || (j.writes() && j.Fsync != 1)
		if !cached {
			continue
		}
		if memBytes > 0 && j.fileBytes() > memBytes {
			continue
		}
		jobs = append(jobs, fmt.Sprintf("%q (%s)", j.Name, FormatSize(j.fileBytes())))
	}
	if len(jobs) == 0 {
		return ""
	}
	mem := "an unknown amount of memory"
	if memBytes > 0 {
		mem = FormatSize(memBytes) + " of memory"
	}
	return fmt.Sprintf("fio job %s runs with direct=false on files that fit in %s: "+
		"reads and unsynced writes may be served by the page cache, so the results can describe memory rather than storage. "+
		"Set direct=true, or a size larger than the memory.", strings.Join(jobs, ", "), mem)
}

// Warnings returns every warning about s: [PageCacheWarning], io_depth above 1
// with a synchronous engine (fio caps it at 1), and fsync on a job that never
// writes. Nil when there is nothing to say.
func Warnings(s Spec, memBytes int64) []string {
	var out []string
	if w := PageCacheWarning(s, memBytes); w != "" {
		out = append(out, w)
	}
	for _, j := range s.Jobs {
		if syncEngines[j.IOEngine] && j.IODepth > 1 {
			out = append(out, fmt.Sprintf("fio job %q: io_depth %d has no effect with the synchronous ioengine %q: fio keeps one I/O in flight. Use libaio or io_uring for a queue.", j.Name, j.IODepth, j.IOEngine))
		}
		if j.Fsync > 0 && !j.writes() {
			out = append(out, fmt.Sprintf("fio job %q: fsync %d has no effect, since rw %q never writes.", j.Name, j.Fsync, j.RW))
		}
	}
	return out
}
