package backend_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
	class := acctest.RandomName("acc-hostpath")
	config := func(extra string) string {
		return fmt.Sprintf(`%s
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
	}
	// An install that waits for a workload that never becomes ready, killed while it waits. Its
	// short timeout bounds how long the next apply must consider it possibly still running.
	w := acctest.NewWorkspace(t, cli, rc, config("  set = [{ name = \"fixture.neverReady\", value = \"true\" }]\n  timeouts = { create = \"20s\" }"))
	t.Cleanup(func() {
		if out, err := w.Exec(t, "destroy", "-auto-approve"); err != nil {
			t.Logf("destroy: %v\n%s", err, out)
		}
	})
	apply := w.Start(t, "apply", "-auto-approve")
	apply.WaitFor(t, "the release to be pending-install", 3*time.Minute, func() bool {
		st, err := f.release()
		if err != nil && !errors.Is(err, helm.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil && st.Status == "pending-install"
	})
	apply.Kill(t)
	_ = apply.Wait(t, time.Minute) //nolint:errcheck // killed
	st, err := f.release()
	if err != nil || st.Status != "pending-install" {
		t.Fatalf("after killing the apply: %+v %v", st, err)
	}

	// Until the killed install's timeout (and a margin) has passed, it could still be running:
	// an apply now changes nothing and says when to try again.
	w.Write(t, config(""))
	early, err := w.Exec(t, "apply", "-auto-approve")
	if err == nil || !strings.Contains(strings.Join(strings.Fields(early), " "), "has an operation in progress") {
		t.Fatalf("an apply while the killed install may still run: %v\n%s", err, early)
	}
	if now, err := f.release(); err != nil || now.Status != "pending-install" || now.Revision != 1 {
		t.Fatalf("the early apply changed the release: %+v %v", now, err)
	}
	// The test waits for that moment.
	err = kube.Poll(context.Background(), time.Second, 2*time.Minute, "the killed install's timeout to pass", func(context.Context) (bool, string, error) {
		return time.Since(st.LastDeployed) > 20*time.Second+helm.RecoverSkew+5*time.Second, "started " + st.LastDeployed.String(), nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// The next apply repairs the release and installs it.
	again, err := w.Exec(t, "apply", "-auto-approve")
	if err != nil {
		t.Fatalf("apply after the kill: %v\n%s", err, again)
	}
	text := strings.Join(strings.Fields(again), " ")
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
