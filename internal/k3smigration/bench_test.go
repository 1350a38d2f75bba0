package k3smigration_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/k3smigration"
)

// TestBenchK3sMigration is the benchmark (scripts/bench-k3s.sh runs it): on a data dir of
// about 1 GiB (900 MiB of 1 MiB blobs and 10,000 10 KiB files) with 1% of it rewritten between the
// two copies, k3s's downtime against a one-phase stop-copy-start of the same tree, and the first
// copy's throughput against a plain `rsync -a`. It prints "BENCH key=value" lines.
func TestBenchK3sMigration(t *testing.T) {
	if os.Getenv("CLUSTERSTORAGE_BENCH") == "" {
		t.Skip("benchmark: set CLUSTERSTORAGE_BENCH=1 (scripts/bench-k3s.sh)")
	}
	mib, _ := strconv.Atoi(os.Getenv("CLUSTERSTORAGE_BENCH_MIB"))
	if mib == 0 {
		mib = 900
	}
	s := newStandin(t, standinOptions{FillMB: mib, SmallFiles: 10000})
	bench := func(k string, v any) { fmt.Printf("BENCH %s=%v\n", k, v) }
	du := strings.Fields(run(t, "du", "-s", "-B1", s.Source))[0]
	bench("data_bytes", du)

	// Copy throughput: plain `rsync -a` against the migration's own rsync (scripts/lib.sh sync_tree flags) of
	// the same tree, alternating, three times each, into fresh directories; medians. k3s runs, as
	// during the first copy, so files may vanish (rsync exit 24).
	// Each run starts with nothing left to write back and ends when its data is on disk (sync):
	// otherwise one run pays for the write-back of the one before.
	copyOnce := func(args ...string) time.Duration {
		dst := filepath.Join(s.Root, "copy")
		run(t, "sync")
		start := time.Now()
		if out, err := exec.Command("rsync", append(args, s.Source+"/", dst+"/")...).CombinedOutput(); err != nil {
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 24 {
				t.Fatalf("rsync %v: %v: %s", args, err, out)
			}
		}
		run(t, "sync")
		d := time.Since(start)
		must(t, os.RemoveAll(dst))
		return d
	}
	var plainRuns, oursRuns []time.Duration
	for i := 0; i < 3; i++ {
		plainRuns = append(plainRuns, copyOnce("-a"))
		oursRuns = append(oursRuns, copyOnce("-aHAXxS", "--numeric-ids", "--modify-window=-1", "--delete", "--stats"))
	}
	plainTime, oursTime := median(plainRuns), median(oursRuns)
	bench("plain_rsync_seconds", plainTime.Seconds())
	bench("migration_rsync_seconds", oursTime.Seconds())
	bench("copy_throughput_vs_plain_rsync", fmt.Sprintf("%.2f", plainTime.Seconds()/oursTime.Seconds()))

	// One phase: stop k3s (and its shim), copy everything, start k3s.
	onePhase := filepath.Join(s.Root, "onephase")
	run(t, "sync")
	start := time.Now()
	s.systemctl("stop", "k3s")
	serviceStop := time.Since(start)
	s.stopShim()
	run(t, "rsync", "-aHAXxS", "--numeric-ids", s.Source+"/", onePhase+"/")
	startAt := time.Now()
	s.systemctl("start", "k3s")
	serviceStart := time.Since(startAt)
	onePhaseDowntime := time.Since(start)
	bench("one_phase_downtime_seconds", onePhaseDowntime.Seconds())
	// The stand-in service's own stop and start, which both ways pay.
	bench("service_stop_start_seconds", (serviceStop + serviceStart).Seconds())
	must(t, os.RemoveAll(onePhase))

	// The migration, with 1% of the data rewritten between its two copies.
	run(t, "sync")
	target := filepath.Join(s.Root, "mnt/nvme/k3s")
	spec := s.spec(target)
	changed := 0
	hooks := k3smigration.Hooks{Before: func(_ context.Context, step k3smigration.Step) error {
		if step != k3smigration.StepStop {
			return nil
		}
		dir := filepath.Join(s.Source, "agent/containerd/io.containerd.content.v1.content/blobs/sha256")
		buf := make([]byte, 1<<20)
		for i := 0; i < mib/100; i++ {
			_, _ = rand.Read(buf)
			mustWrite(t, filepath.Join(dir, fmt.Sprintf("fill%04d", i*97%mib)), string(buf), 0o644)
			changed += len(buf)
		}
		return nil
	}}
	res, err := k3smigration.Migrate(context.Background(), s.Host, spec, hooks)
	if err != nil {
		t.Fatalf("migrate: %v", err)
	}
	bench("changed_bytes", changed)
	for _, st := range res.Steps {
		bench("step_seconds."+strings.ReplaceAll(string(st.Step), " ", "_"), st.Duration.Seconds())
		if st.Step == k3smigration.StepCopy {
			// The first copy inside the migration (through sshd, once, after the runs above).
			bench("first_copy_seconds", st.Duration.Seconds())
			bench("first_copy_throughput_vs_plain_rsync", fmt.Sprintf("%.2f", plainTime.Seconds()/st.Duration.Seconds()))
		}
	}
	bench("migration_downtime_seconds", res.Downtime.Seconds())
	bench("downtime_vs_one_phase", fmt.Sprintf("%.2f", res.Downtime.Seconds()/onePhaseDowntime.Seconds()))
}

func median(d []time.Duration) time.Duration {
	sorted := append([]time.Duration(nil), d...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	return sorted[len(sorted)/2]
}

// stopShim stops the stand-in's containerd shim and unmounts its rootfs, as a one-phase move must.
func (s *standin) stopShim() {
	if b, err := os.ReadFile(filepath.Join(s.State, "shim.pid")); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
	}
	for _, mp := range mountsBelowDir(s.Source) {
		for i := 0; i < 50; i++ {
			if err := exec.Command("umount", mp).Run(); err == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
