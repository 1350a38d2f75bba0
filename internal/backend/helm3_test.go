package backend_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/helm"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

// TestAccStorageBackend_helm3Release: a release installed with the Helm 3 CLI, as users of the
// seed article did, is imported (an import block), upgraded through the resource (Helm 4: the release was applied
// client-side, so the upgrade stays client-side and meets no field-manager conflict), a failed
// upgrade of it is rolled back, and destroy uninstalls it.
func TestAccStorageBackend_helm3Release(t *testing.T) {
	t.Parallel() // as the other Longhorn guard-fixture tests: mostly waits
	g := newGuard(t)
	install := helm3Command(t, "install", "longhorn", "longhorn", "--repo", g.repo, "--version", "1.8.1",
		"--namespace", g.ns, "--create-namespace", "--wait", "--timeout", "5m",
		"--set", "fixture.className="+g.class, "--set", "persistence.defaultClass=false", "--set", "fixture.apiServer="+g.api,
		// The class's parameters as the configuration has them: they are immutable, and this
		// fixture (unlike real Longhorn, whose manager makes the class) renders the class itself.
		"--set", "persistence.defaultClassReplicaCount=1")
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("helm3 install: %v\n%s", err, out)
	}
	before, err := g.helm.Get("longhorn", g.ns)
	if err != nil || before.Revision != 1 || before.Status != "deployed" {
		t.Fatalf("after helm3 install: %+v %v", before, err)
	}
	config := g.longhorn(true, "", "")
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy:             g.checkReleaseGone("longhorn"),
		Steps: []resource.TestStep{
			{
				// Adopted as users adopt a release: an import block. The configuration's values
				// differ from what helm3 was given, so the same apply upgrades it (Helm 4).
				Config: config + fmt.Sprintf("\nimport {\n  to = %s\n  id = %q\n}\n", addr, g.ns+"/longhorn"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("status"), knownvalue.StringExact("deployed")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("revision"), knownvalue.Int64Exact(2)),
				},
				Check: g.checkApplyMethod(2, "csa"),
			},
			{
				// A pre-upgrade hook that fails: the upgrade is rolled back to revision 2.
				Config:      g.longhorn(false, "", "  timeouts = { update = \"2m\" }"),
				ExpectError: acctest.ErrorWords("upgrading release " + g.ns + "/longhorn"),
			},
			{
				PreConfig: func() {
					st, err := g.helm.Get("longhorn", g.ns)
					fixture, _ := st.Values["fixture"].(map[string]any)
					if err != nil || st.Status != "deployed" || st.Revision != 4 || fixture["failPreUpgrade"] != false {
						t.Fatalf("after the failed upgrade: revision %d %s %v (want revision 4, the rollback to 2) %v", st.Revision, st.Status, st.Values, err)
					}
				},
				Config:   config,
				PlanOnly: true,
			},
		},
	})
}

// TestAccStorageBackend_helm3KilledInstall: this provider's releases made before it moved to Helm
// 4 were Helm 3's, with its owner labels. One such install was killed while Helm 3 waited (here:
// the Helm 3 CLI with the same labels, SIGKILLed while its install waits), leaving the release
// pending-install. Once its recorded timeout has passed, the next apply (Helm 4) removes it and
// installs again.
func TestAccStorageBackend_helm3KilledInstall(t *testing.T) {
	acctest.RunsUnder(t, acctest.FirstCLIOnly)
	t.Parallel() // as the other Longhorn guard-fixture tests: mostly waits
	g := newGuard(t)
	// Nothing provisions the internal claim's class, so helm waits until it is killed.
	install := helm3Command(t, "install", "longhorn", "longhorn", "--repo", g.repo, "--version", "1.8.1",
		"--namespace", g.ns, "--create-namespace", "--wait", "--timeout", "10m",
		"--labels", helm.OwnerLabel+"=terraform-provider-clusterstorage,"+helm.TimeoutLabel+"=1,"+helm.RevisionLabel+"=1",
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
	kill := func() {
		_ = syscall.Kill(-install.Process.Pid, syscall.SIGKILL)
		<-done
	}
	t.Cleanup(kill)
	ctx := context.Background()
	err := kube.Poll(ctx, 200*time.Millisecond, 2*time.Minute, "helm3's release to be pending-install", func(context.Context) (bool, string, error) {
		st, err := g.helm.Get("longhorn", g.ns)
		switch {
		case errors.Is(err, helm.ErrNotFound):
			return false, "no release yet", nil
		case err != nil:
			return false, "", err
		}
		return st.Status == "pending-install", st.Status, nil
	})
	if err != nil {
		t.Fatalf("%v\nhelm3: %s", err, out.String())
	}
	kill()

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy:             g.checkReleaseGone("longhorn"),
		Steps: []resource.TestStep{
			{
				// Its 1 s timeout and the 30 s margin have passed by the time the apply reads it.
				PreConfig: func() { time.Sleep(32 * time.Second) },
				Config:    g.longhorn(true, "", ""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("status"), knownvalue.StringExact("deployed")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("revision"), knownvalue.Int64Exact(1)),
				},
				Check: g.checkApplyMethod(1, "ssa"),
			},
		},
	})
}

// checkApplyMethod checks how Helm applied revision of the guard's Longhorn release ("csa":
// client-side, as Helm 3 did; "ssa": server-side).
func (g *guard) checkApplyMethod(revision int, want string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		cfg := g.actionConfig()
		r, err := helm.AsRelease(cfg.Releases.Get("longhorn", revision))
		if err != nil {
			return err
		}
		got := r.ApplyMethod
		if got == "" {
			got = "csa" // Helm 3 records none: client-side
		}
		if got != want {
			return fmt.Errorf("revision %d was applied %s, want %s", revision, got, want)
		}
		return nil
	}
}
