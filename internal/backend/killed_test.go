package backend_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/helm"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

// TestAccStorageBackend_killedApply kills a real `terraform apply` (and the provider process
// under it) while Helm waits for the install, which leaves the release pending-install; the next
// apply (once the killed install's timeout has passed) repairs it, says so in a warning, and
// installs. It runs the CLI the way a user does: the
// provider binary built from this repository, found through dev_overrides.
func TestAccStorageBackend_killedApply(t *testing.T) {
	// Parallel, after the serial tests, with the Longhorn tests that mostly wait (they take the
	// Longhorn lock in turn): it waits out the killed install's timeout. Not with another OpenEBS
	// test: a destroy's guard counts the claims of every class its release renders, and Mayastor's
	// classes have fixed names, as in the real chart.
	t.Parallel()
	f := newFixture(t)
	cli, rc := acctest.DevCLI(t)
	work := t.TempDir()
	class := acctest.RandomName("acc-hostpath")
	write := func(extra string) {
		cfg := fmt.Sprintf(`terraform {
  required_providers {
    clusterstorage = { source = "clusterstorage/clusterstorage" }
  }
}
%s
resource "clusterstorage_storage_backend" "test" {
  type       = "openebs"
  repository = %q
  version    = "4.4.0"
  namespace  = %q
  openebs = {
    hostpath_class_name = %q
    volume_snapshot_crds = false
  }
%s
}
`, acctest.ProviderConfig(), f.repo, f.ns, class, extra)
		if err := os.WriteFile(filepath.Join(work, "main.tf"), []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	command := func(args ...string) *exec.Cmd {
		cmd := exec.Command(cli, append(args, "-no-color")...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+rc, "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1", "TF_ACC=", "TF_LOG=")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		return cmd
	}
	t.Cleanup(func() {
		if out, err := command("destroy", "-auto-approve").CombinedOutput(); err != nil {
			t.Logf("destroy: %v\n%s", err, out)
		}
	})

	// An install that waits for a workload that never becomes ready, killed while it waits. Its
	// short timeout bounds how long the next apply must consider it possibly still running.
	write("  set = [{ name = \"fixture.neverReady\", value = \"true\" }]\n  timeouts = { create = \"20s\" }")
	apply := command("apply", "-auto-approve")
	var out strings.Builder
	apply.Stdout, apply.Stderr = &out, &out
	if err := apply.Start(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	err := kube.Poll(ctx, 200*time.Millisecond, 3*time.Minute, "the release to be pending-install", func(context.Context) (bool, string, error) {
		st, err := f.release()
		switch {
		case errors.Is(err, helm.ErrNotFound):
			return false, "no release yet", nil
		case err != nil:
			return false, "", err
		}
		return st.Status == "pending-install", st.Status, nil
	})
	if err != nil {
		_ = syscall.Kill(-apply.Process.Pid, syscall.SIGKILL)
		_ = apply.Wait()
		t.Fatalf("%v\n%s", err, out.String())
	}
	if err := syscall.Kill(-apply.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = apply.Wait()
	st, err := f.release()
	if err != nil || st.Status != "pending-install" {
		t.Fatalf("after killing the apply: %+v %v", st, err)
	}

	// Until the killed install's timeout (and a margin) has passed, it could still be running:
	// an apply now changes nothing and says when to try again.
	write("")
	early, err := command("apply", "-auto-approve").CombinedOutput()
	if err == nil || !strings.Contains(strings.Join(strings.Fields(string(early)), " "), "has an operation in progress") {
		t.Fatalf("an apply while the killed install may still run: %v\n%s", err, early)
	}
	if now, err := f.release(); err != nil || now.Status != "pending-install" || now.Revision != 1 {
		t.Fatalf("the early apply changed the release: %+v %v", now, err)
	}
	// The test waits for that moment.
	err = kube.Poll(ctx, time.Second, 2*time.Minute, "the killed install's timeout to pass", func(context.Context) (bool, string, error) {
		return time.Since(st.LastDeployed) > 55*time.Second, "started " + st.LastDeployed.String(), nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// The next apply repairs the release and installs it.
	write("")
	again, err := command("apply", "-auto-approve").CombinedOutput()
	if err != nil {
		t.Fatalf("apply after the kill: %v\n%s", err, again)
	}
	text := strings.Join(strings.Fields(string(again)), " ")
	for _, want := range []string{"Warning: Recovered an interrupted Helm release", "was stuck in pending-install at revision 1", "Apply complete! Resources: 1 added"} {
		if !strings.Contains(text, want) {
			t.Errorf("the apply after the kill does not say %q:\n%s", want, again)
		}
	}
	st, err = f.release()
	if err != nil || st.Status != "deployed" || st.Revision != 1 {
		t.Fatalf("after recovery: %+v %v", st, err)
	}
	if err := f.checkAbsent("Deployment", "openebs-fixture-never-ready")(nil); err != nil {
		t.Error(err)
	}
}
