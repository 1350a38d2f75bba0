package k3smigration_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/k3smigration"
)

// These tests run the migration machinery against the stand-in k3s node (real sshd, rsync, files,
// mounts and processes on this machine), without Terraform or Kubernetes: the node-Ready check is
// left out here and covered by the acceptance tests.

func (s *standin) spec(target string) k3smigration.Spec {
	return k3smigration.Spec{Source: s.Source, Target: target, KeepBackup: true, ConfigFile: s.Config, FstabFile: s.Fstab,
		StopTimeout: 30 * time.Second, HealthTimeout: 20 * time.Second, RollbackTimeout: time.Minute}
}

// checkMigrated checks that the service runs on target, that target holds the data, and that the
// original (at backup) is what it was before.
func checkMigrated(t *testing.T, s *standin, target, backup string, before map[string]fileState, rowsBefore int) {
	t.Helper()
	if got := s.isActive("k3s"); got != "active" {
		t.Errorf("k3s is %q after the migration\n%s", got, s.serviceLog())
	}
	if got := s.dataDirInUse("k3s"); got != target {
		t.Errorf("k3s runs on %q, want %q", got, target)
	}
	if diffs := compareSnapshots(before, snapshot(t, target, true)); len(diffs) > 0 {
		t.Errorf("target differs from the original:\n%s", strings.Join(diffs, "\n"))
	}
	if backup != "" {
		if diffs := compareSnapshots(before, snapshot(t, backup, true)); len(diffs) > 0 {
			t.Errorf("the original (backup %s) changed:\n%s", backup, strings.Join(diffs, "\n"))
		}
	}
	if rows := dbRows(t, target); rows < rowsBefore {
		t.Errorf("datastore in target has %d rows, the original had %d before", rows, rowsBefore)
	}
}

// checkIntact checks that the service runs on the original directory and that it is unchanged.
func checkIntact(t *testing.T, s *standin, before map[string]fileState, rowsBefore int) {
	t.Helper()
	fi, err := os.Lstat(s.Source)
	if err != nil || !fi.IsDir() {
		t.Fatalf("source is not a directory any more: %v %v", fi, err)
	}
	if got := s.isActive("k3s"); got != "active" {
		t.Errorf("k3s is %q, want active\n%s", got, s.serviceLog())
	}
	if got := s.dataDirInUse("k3s"); got != s.Source {
		t.Errorf("k3s runs on %q, want the original %q", got, s.Source)
	}
	if diffs := compareSnapshots(before, snapshot(t, s.Source, true)); len(diffs) > 0 {
		t.Errorf("the original changed:\n%s", strings.Join(diffs, "\n"))
	}
	if rows := dbRows(t, s.Source); rows < rowsBefore {
		t.Errorf("datastore has %d rows, had %d before", rows, rowsBefore)
	}
}

func TestMigrate_symlink(t *testing.T) {
	s := newStandin(t, standinOptions{})
	ctx := context.Background()
	target := filepath.Join(s.Root, "mnt/nvme/k3s")
	before := snapshot(t, s.Source, true)
	rows := dbRows(t, s.Source)

	res, err := k3smigration.Migrate(ctx, s.Host, s.spec(target), k3smigration.Hooks{})
	if err != nil {
		t.Fatalf("migrate: %v\nservice log:\n%s", err, s.serviceLog())
	}
	link, err := os.Readlink(s.Source)
	if err != nil || link != target {
		t.Fatalf("source is not a link to the target: %q %v", link, err)
	}
	checkMigrated(t, s, target, res.BackupPath, before, rows)
	if res.Service != "k3s" || res.FilesCopied == 0 || res.BytesCopied == 0 || res.Downtime <= 0 || res.SourceFS.Device == "" {
		t.Errorf("unexpected result %+v", res)
	}
	t.Logf("result: %+v", res)

	st, err := k3smigration.ReadState(ctx, s.Host, s.spec(target))
	if err != nil || !st.InUse {
		t.Errorf("ReadState after the migration: %+v %v", st, err)
	}

	// A second migration of the same source is refused: it is a link now.
	_, err = k3smigration.Migrate(ctx, s.Host, s.spec(filepath.Join(s.Root, "other")), k3smigration.Hooks{})
	var se *k3smigration.StepError
	if !errors.As(err, &se) || se.Step != k3smigration.StepPreflight || !strings.Contains(err.Error(), "looks migrated already") {
		t.Errorf("second migration: %v", err)
	}

	// Restore moves it back.
	rres, err := k3smigration.Restore(ctx, s.Host, s.spec(target), k3smigration.Hooks{})
	if err != nil {
		t.Fatalf("restore: %v\n%s", err, s.serviceLog())
	}
	t.Logf("restore: %+v", rres)
	checkIntact(t, s, before, rows)
	if _, err := os.Stat(filepath.Join(s.Source, k3smigration.MarkerName)); !os.IsNotExist(err) {
		t.Errorf("the marker is left in the restored directory: %v", err)
	}
	if st, err := k3smigration.ReadState(ctx, s.Host, s.spec(target)); err != nil || st.InUse {
		t.Errorf("ReadState after the restore: %+v %v", st, err)
	}
}
