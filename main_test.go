package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestUnreadLogs(t *testing.T) {
	all := []string{"TF_LOG_PROVIDER", "TF_LOG_SDK", "TF_LOG_SDK_PROTO", "TF_LOG_SDK_FRAMEWORK"}
	for _, tc := range []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"nothing set: the CLI drops every log", nil, all},
		{"TF_LOG set: the CLI keeps them", map[string]string{"TF_LOG": "DEBUG"}, nil},
		{"TF_LOG_PROVIDER set: the CLI keeps them", map[string]string{"TF_LOG_PROVIDER": "TRACE"}, nil},
		{"a subsystem level the user chose is kept", map[string]string{"TF_LOG_SDK_PROTO": "trace"},
			[]string{"TF_LOG_PROVIDER", "TF_LOG_SDK", "TF_LOG_SDK_FRAMEWORK"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := unreadLogs(func(k string) string { return tc.env[k] })
			if !slices.Equal(got, tc.want) {
				t.Fatalf("unreadLogs = %v, want %v", got, tc.want)
			}
		})
	}
}

// The heap profiler writes a profile when the live heap reaches a new high, with its size, and
// one more at exit.
func TestHeapProfiler(t *testing.T) {
	dir := t.TempDir()
	p, err := startHeapProfiler(dir)
	if err != nil {
		t.Fatal(err)
	}
	var held [][]byte
	deadline := time.Now().Add(20 * time.Second)
	pid := os.Getpid()
	for {
		held = append(held, make([]byte, 1<<20))
		runtime.GC()
		if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("heap-%d.pb.gz", pid))); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no profile after the live heap grew by %d MiB", len(held))
		}
		time.Sleep(20 * time.Millisecond)
	}
	runtime.KeepAlive(held)
	p.Stop()
	size, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("heap-%d.txt", pid)))
	if err != nil {
		t.Fatal(err)
	}
	if n, err := strconv.ParseUint(strings.TrimSpace(string(size)), 10, 64); err != nil || n < 1<<20 {
		t.Fatalf("heap-%d.txt says %q; want the live heap in bytes", pid, size)
	}
	for _, name := range []string{fmt.Sprintf("heap-%d.pb.gz", pid), fmt.Sprintf("heap-%d-exit.pb.gz", pid), fmt.Sprintf("goroutines-%d.txt", pid)} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, ".gz") && (len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b) {
			t.Fatalf("%s is not a gzipped profile", name)
		}
	}
}
