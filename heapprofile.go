package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"sync"
	"time"
)

// heapProfileEnv names a directory: when set, the provider writes pprof heap profiles of itself
// there (off by default). It is for measuring the provider's memory (scripts/bench-memory.sh).
const heapProfileEnv = "CLUSTERSTORAGE_HEAP_PROFILE"

// heapProfiler writes a heap profile each time the live heap (as of the last garbage collection)
// reaches a new high, so that the last one written shows what the process held at its largest,
// and one more when the provider stops. Files are named heap-<pid>.pb.gz (the largest so far) and
// heap-<pid>-exit.pb.gz; heap-<pid>.txt holds the largest live heap in bytes, goroutines-<pid>.txt
// the goroutines at that moment. Every provider
// process the CLI starts writes its own.
type heapProfiler struct {
	dir  string
	pid  int
	stop chan struct{}
	done sync.WaitGroup

	peak uint64 // largest live heap profiled, bytes
}

// heapProfileInterval is how often the profiler reads the live heap (a cheap runtime/metrics
// read; a profile is written only on a new high).
const heapProfileInterval = 100 * time.Millisecond

// startHeapProfiler starts writing profiles to dir, which it creates. Stop it with stop.
func startHeapProfiler(dir string) (*heapProfiler, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%s: %w", heapProfileEnv, err)
	}
	// The default sampling rate (one sample per 512 KiB allocated) is enough to rank the largest
	// holders; recording every allocation would slow the provider down.
	p := &heapProfiler{dir: dir, pid: os.Getpid(), stop: make(chan struct{})}
	p.done.Add(1)
	go p.run()
	return p, nil
}

func (p *heapProfiler) run() {
	defer p.done.Done()
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	tick := time.NewTicker(heapProfileInterval)
	defer tick.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-tick.C:
		}
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return
		}
		// A new high by at least 1 MiB: profiles are not free to write.
		if live := sample[0].Value.Uint64(); live > p.peak+1<<20 {
			p.peak = live
			p.write(fmt.Sprintf("heap-%d.pb.gz", p.pid))
			p.writeGoroutines(fmt.Sprintf("goroutines-%d.txt", p.pid))
			_ = os.WriteFile(filepath.Join(p.dir, fmt.Sprintf("heap-%d.txt", p.pid)), fmt.Appendf(nil, "%d\n", live), 0o644)
		}
	}
}

// write writes the heap profile as of the last garbage collection to name in the directory.
func (p *heapProfiler) write(name string) {
	path := filepath.Join(p.dir, name)
	f, err := os.Create(path + ".tmp")
	if err != nil {
		return
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		_ = f.Close()
		_ = os.Remove(path + ".tmp")
		return
	}
	if f.Close() == nil {
		_ = os.Rename(path+".tmp", path)
	}
}

// writeGoroutines writes the goroutines' stacks, counted by stack, to name in the directory: what
// was running when the live heap was largest (requests in flight, or goroutines left behind).
func (p *heapProfiler) writeGoroutines(name string) {
	f, err := os.Create(filepath.Join(p.dir, name))
	if err != nil {
		return
	}
	_ = pprof.Lookup("goroutine").WriteTo(f, 1)
	_ = f.Close()
}

// Stop ends the sampling and writes the exit profile (after a collection, so that it shows what
// was still live at the end).
func (p *heapProfiler) Stop() {
	close(p.stop)
	p.done.Wait()
	runtime.GC()
	p.write(fmt.Sprintf("heap-%d-exit.pb.gz", p.pid))
}
