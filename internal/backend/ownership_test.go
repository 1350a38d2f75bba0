package backend_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/helm"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

// helmCLI returns a helm CLI that tools/ pins, built when it is missing: "helm" (Helm 4, the
// provider's own version) or "helm3" (the last Helm 3, as users who installed with it have).
// CI builds both before the tests (.ci/run, scripts/test.sh).
func helmCLI(t *testing.T, name string) string {
	t.Helper()
	build := exec.Command(filepath.Join(acctest.RepoRoot(), "tools", "build-tool.sh"), name)
	build.Env = append(os.Environ(), "ROOT="+acctest.RepoRoot())
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the %s CLI (tools/%s): %v\n%s", name, name, err, out)
	}
	return filepath.Join(acctest.RepoRoot(), "bin", name)
}

// helm3Command returns a command of the Helm 3 CLI against the test cluster, with helm's own
// state in a directory of the test, in a process group of its own (so a kill stops its children).
func helm3Command(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(helmCLI(t, "helm3"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+acctest.Kubeconfig(), "HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// TestAccStorageBackend_foreignPendingRelease: a person's `helm install` (Helm 3) of the same release is
// still running (pending-install, longer than the backend's create timeout); the apply refuses,
// says how to import the release, and changes nothing: the release and the helm process go on.
func TestAccStorageBackend_foreignPendingRelease(t *testing.T) {
	acctest.RunsUnder(t, acctest.FirstCLIOnly)
	t.Parallel() // after the serial tests, with the others that mostly wait; holds the Longhorn lock
	g := newGuard(t)
	// Nothing provisions the internal claim's class, so helm waits (up to its 10 minutes).
	install := helm3Command(t, "install", "longhorn", "longhorn", "--repo", g.repo, "--version", "1.8.1",
		"--namespace", g.ns, "--create-namespace", "--wait", "--timeout", "10m",
		"--set", "fixture.className="+g.class, "--set", "persistence.defaultClass=false",
		"--set", "fixture.internalClaimClass="+acctest.RandomName("acc-none"))
	var out strings.Builder
	install.Stdout, install.Stderr = &out, &out
	if err := install.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		_ = install.Wait()
		close(done)
	}()
	stop := func() {
		_ = syscall.Kill(-install.Process.Pid, syscall.SIGKILL)
		<-done
	}
	t.Cleanup(stop) // before the fixture's cleanup uninstalls the release

	ctx := context.Background()
	var started time.Time
	err := kube.Poll(ctx, 200*time.Millisecond, 2*time.Minute, "helm's release to be pending-install", func(context.Context) (bool, string, error) {
		st, err := g.helm.Get("longhorn", g.ns)
		switch {
		case errors.Is(err, helm.ErrNotFound):
			return false, "no release yet", nil
		case err != nil:
			return false, "", err
		}
		started = st.LastDeployed
		return st.Status == "pending-install", st.Status, nil
	})
	if err != nil {
		t.Fatalf("%v\nhelm: %s", err, out.String())
	}
	// Older than the create timeout below (and its margin): only ownership protects it now.
	if err := kube.Poll(ctx, time.Second, 2*time.Minute, "the release to be older than the create timeout", func(context.Context) (bool, string, error) {
		return time.Since(started) > 40*time.Second, "", nil
	}); err != nil {
		t.Fatal(err)
	}

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: g.longhorn(true, "", "  timeouts = { create = \"5s\" }"),
				ExpectError: regexp.MustCompile(`Helm\s+release\s+` + regexp.QuoteMeta(g.ns) + `/longhorn\s+already\s+exists[\s\S]*` +
					`It\s+was\s+not\s+installed\s+by\s+this\s+provider[\s\S]*left\s+exactly\s+as\s+it\s+is[\s\S]*terraform\s+import`),
			},
		},
	})

	st, err := g.helm.Get("longhorn", g.ns)
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != "pending-install" || st.Revision != 1 || !st.LastDeployed.Equal(started) || len(st.Labels) != 0 {
		t.Errorf("the apply changed the person's release: %s revision %d since %s, labels %v", st.Status, st.Revision, st.LastDeployed, st.Labels)
	}
	select {
	case <-done:
		t.Errorf("the person's helm install ended during the apply:\n%s", out.String())
	default:
	}
}

// TestAccStorageBackend_foreignPendingUpgrade: the provider installed the release; a person's
// `helm upgrade` (Helm 3) of it is still running (Helm copied the provider's release labels into the
// pending revision). Destroy refuses and changes nothing until the person is done (here: the
// upgrade is killed and rolled back with helm), then uninstalls.
func TestAccStorageBackend_foreignPendingUpgrade(t *testing.T) {
	acctest.RunsUnder(t, acctest.FirstCLIOnly)
	t.Parallel() // as foreignPendingRelease
	g := newGuard(t)
	helmCmd := func(args ...string) *exec.Cmd { return helm3Command(t, args...) }
	config := g.longhorn(true, "", "")
	var out strings.Builder
	var done chan struct{}
	var upgrade *exec.Cmd

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy:             g.checkReleaseGone("longhorn"),
		Steps: []resource.TestStep{
			{Config: config},
			{
				PreConfig: func() {
					// Nothing provisions the new claim's class, so helm waits.
					upgrade = helmCmd("upgrade", "longhorn", "longhorn", "--repo", g.repo, "--version", "1.8.1", "--namespace", g.ns,
						"--reuse-values", "--wait", "--timeout", "10m", "--set", "fixture.internalClaimClass="+acctest.RandomName("acc-none"))
					upgrade.Stdout, upgrade.Stderr = &out, &out
					if err := upgrade.Start(); err != nil {
						t.Fatal(err)
					}
					done = make(chan struct{})
					go func() {
						_ = upgrade.Wait()
						close(done)
					}()
					t.Cleanup(func() {
						_ = syscall.Kill(-upgrade.Process.Pid, syscall.SIGKILL)
						<-done
					})
					err := kube.Poll(context.Background(), 200*time.Millisecond, 2*time.Minute, "the person's upgrade to be pending", func(context.Context) (bool, string, error) {
						st, err := g.helm.Get("longhorn", g.ns)
						if err != nil {
							return false, "", err
						}
						return st.Status == "pending-upgrade", st.Status, nil
					})
					if err != nil {
						t.Fatalf("%v\nhelm: %s", err, out.String())
					}
				},
				Config:  config,
				Destroy: true,
				ExpectError: regexp.MustCompile(`is\s+pending-upgrade\s+and\s+was\s+not\s+made\s+by\s+this\s+provider[\s\S]*` +
					`not\s+written\s+by\s+terraform-provider-clusterstorage\s+\(its\s+labels\s+are\s+copied\s+from\s+an\s+earlier\s+revision\)`),
			},
			{
				PreConfig: func() {
					st, err := g.helm.Get("longhorn", g.ns)
					if err != nil || st.Status != "pending-upgrade" || st.Revision != 2 {
						t.Fatalf("after the refused destroy: %+v %v", st, err)
					}
					select {
					case <-done:
						t.Fatalf("the person's helm upgrade ended during the destroy:\n%s", out.String())
					default:
					}
					// The person gives up: kills the upgrade and rolls back with helm.
					_ = syscall.Kill(-upgrade.Process.Pid, syscall.SIGKILL)
					<-done
					if b, err := helmCmd("rollback", "longhorn", "1", "--namespace", g.ns, "--wait", "--timeout", "2m").CombinedOutput(); err != nil {
						t.Fatalf("helm rollback: %v\n%s", err, b)
					}
				},
				// The rollback is revision 3 with revision 1's values; state (refreshed while the
				// upgrade was pending) catches up.
				Config: config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("status"), knownvalue.StringExact("deployed")),
				},
			},
		},
	})
}
