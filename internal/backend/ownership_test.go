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

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/helm"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

// helmCLI returns the helm CLI that tools/helm pins (bin/helm), building it when it is missing.
func helmCLI(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(acctest.RepoRoot(), "bin", "helm")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "helm.sh/helm/v3/cmd/helm")
	build.Dir = filepath.Join(acctest.RepoRoot(), "tools", "helm")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the helm CLI (tools/helm): %v\n%s", err, out)
	}
	return bin
}

// TestAccStorageBackend_foreignPendingRelease: a person's `helm install` of the same release is
// still running (pending-install, longer than the backend's create timeout); the apply refuses,
// says how to import the release, and changes nothing: the release and the helm process go on.
func TestAccStorageBackend_foreignPendingRelease(t *testing.T) {
	g := newGuard(t)
	home := t.TempDir()
	// Nothing provisions the internal claim's class, so helm waits (up to its 10 minutes).
	install := exec.Command(helmCLI(t), "install", "longhorn", "longhorn", "--repo", g.repo, "--version", "1.8.1",
		"--namespace", g.ns, "--create-namespace", "--wait", "--timeout", "10m",
		"--set", "fixture.className="+g.class, "--set", "persistence.defaultClass=false",
		"--set", "fixture.internalClaimClass="+acctest.RandomName("acc-none"))
	install.Env = append(os.Environ(), "KUBECONFIG="+acctest.Kubeconfig(), "HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
	install.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
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
