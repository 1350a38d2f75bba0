package k3smigration_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
)

// The acceptance tests run the resource through the Terraform CLI against the stand-in k3s node
// (see standin_test.go) reached through a real sshd, with the local cluster's node as the
// Kubernetes node: its name resolves to the stand-in's sshd through the provider's nodes map, and
// its kubelet (the cluster's real one, not the stand-in) is what the health check sees Ready.

const addr = "clusterstorage_k3s_data_dir_migration.test"

// accStandin starts the stand-in for an acceptance test (skipped without TF_ACC).
func accStandin(t *testing.T, opts standinOptions) (*standin, string) {
	t.Helper()
	nodeName := acctest.Node(t) // skips outside an acceptance run
	return newStandin(t, opts), nodeName
}

func migrationConfig(s *standin, nodeName, target, extra string) string {
	return acctest.ProviderConfigSSH(s.SSHD, nodeName) + fmt.Sprintf(`
resource "clusterstorage_k3s_data_dir_migration" "test" {
  node              = %q
  source            = %q
  target            = %q
  config_file       = %q
  free_space_margin = "0"
%s
}
`, nodeName, s.Source, target, s.Config, extra)
}

// checkLinked checks on the node that source links to target and k3s runs there.
func checkLinked(s *standin, target string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		link, err := os.Readlink(s.Source)
		if err != nil || link != target {
			return fmt.Errorf("source is not a link to %s: %q %v", target, link, err)
		}
		if got := s.dataDirInUse("k3s"); got != target || s.isActive("k3s") != "active" {
			return fmt.Errorf("k3s is %q on %q, want active on %s", s.isActive("k3s"), got, target)
		}
		return nil
	}
}

// checkOnSource checks that source is a directory again and k3s runs on it.
func checkOnSource(s *standin) func(*terraform.State) error {
	return func(*terraform.State) error {
		fi, err := os.Lstat(s.Source)
		if err != nil || !fi.IsDir() {
			return fmt.Errorf("source is not a directory: %v %v", fi, err)
		}
		if got := s.dataDirInUse("k3s"); got != s.Source || s.isActive("k3s") != "active" {
			return fmt.Errorf("k3s is %q on %q, want active on %s", s.isActive("k3s"), got, s.Source)
		}
		return nil
	}
}

func TestAccK3sDataDirMigration_basic(t *testing.T) {
	s, nodeName := accStandin(t, standinOptions{})
	target := filepath.Join(s.Root, "mnt/nvme/k3s")
	before := snapshot(t, s.Source, true)
	rows := dbRows(t, s.Source)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy:             checkOnSource(s),
		Steps: []resource.TestStep{
			{
				Config: migrationConfig(s, nodeName, target, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("id"), knownvalue.StringExact(nodeName+":"+s.Source)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("service"), knownvalue.StringExact("k3s")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("switch_method"), knownvalue.StringExact("symlink")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("keep_backup"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("backup_path"), knownvalue.StringRegexp(regexp.MustCompile(`k3s\.pre-migration-\d{8}T\d{6}Z$`))),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("files_copied"), knownvalue.Int64Func(func(v int64) error {
						if v < 15 {
							return fmt.Errorf("files_copied = %d", v)
						}
						return nil
					})),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("bytes_copied"), knownvalue.Int64Func(func(v int64) error {
						if v < 1<<20 {
							return fmt.Errorf("bytes_copied = %d", v)
						}
						return nil
					})),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("downtime_seconds"), knownvalue.Float64Func(func(v float64) error {
						if v <= 0 {
							return fmt.Errorf("downtime_seconds = %v", v)
						}
						return nil
					})),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("target_filesystem"), knownvalue.StringRegexp(regexp.MustCompile(`free of`))),
				},
				Check: resource.ComposeTestCheckFunc(checkLinked(s, target), func(st *terraform.State) error {
					backup := st.RootModule().Resources[addr].Primary.Attributes["backup_path"]
					if diffs := compareSnapshots(before, snapshot(t, backup, true)); len(diffs) > 0 {
						return fmt.Errorf("the original changed:\n%s", strings.Join(diffs, "\n"))
					}
					if diffs := compareSnapshots(before, snapshot(t, target, true)); len(diffs) > 0 {
						return fmt.Errorf("the copy differs:\n%s", strings.Join(diffs, "\n"))
					}
					if n := dbRows(t, target); n < rows {
						return fmt.Errorf("datastore lost rows: %d < %d", n, rows)
					}
					return nil
				}),
			},
			// Applying again changes nothing.
			{
				Config: migrationConfig(s, nodeName, target, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
			},
			{
				ResourceName:            addr,
				ImportState:             true,
				ImportStateId:           nodeName + "," + s.Source + "," + target,
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"config_file", "free_space_margin", "service", "backup_path", "bytes_copied", "files_copied", "downtime_seconds", "migrated_at", "source_filesystem", "target_filesystem"},
			},
			// restore_on_destroy is changed in place; destroy then moves the data back (CheckDestroy).
			{
				Config: migrationConfig(s, nodeName, target, "  restore_on_destroy = true"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				Check: checkLinked(s, target),
			},
		},
	})
}

// A migration reverted by hand shows in the plan and is made again.
func TestAccK3sDataDirMigration_driftAfterManualRevert(t *testing.T) {
	s, nodeName := accStandin(t, standinOptions{})
	target := filepath.Join(s.Root, "mnt/nvme/k3s")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{
			{Config: migrationConfig(s, nodeName, target, ""), Check: checkLinked(s, target)},
			{
				PreConfig: func() {
					// What an operator undoing it would do: stop k3s, put the original back, start.
					backups, _ := filepath.Glob(s.Source + ".pre-migration-*")
					if len(backups) != 1 {
						t.Fatalf("backups: %v", backups)
					}
					s.systemctl("stop", "k3s")
					must(t, os.Remove(s.Source))
					must(t, os.Rename(backups[0], s.Source))
					s.systemctl("start", "k3s")
				},
				Config: migrationConfig(s, nodeName, target, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate),
				}},
				// The target still holds the earlier copy (with its marker): it is brought up to date.
				Check: checkLinked(s, target),
			},
		},
	})
}

// A failure after the stop rolls back, writes no state, and a rerun succeeds.
func TestAccK3sDataDirMigration_startFailsRollsBack(t *testing.T) {
	s, nodeName := accStandin(t, standinOptions{})
	target := filepath.Join(s.Root, "mnt/nvme/k3s")
	s.failStartOn(target)
	before := snapshot(t, s.Source, true)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:      migrationConfig(s, nodeName, target, ""),
				ExpectError: regexp.MustCompile(`(?s)step "start" failed.*Rolled\s+back:\s+k3s\s+runs\s+again\s+on\s+the\s+original\s+directory.*nothing\s+was\s+lost`),
			},
			{
				PreConfig: func() {
					if err := checkOnSource(s)(nil); err != nil {
						t.Fatal(err)
					}
					if diffs := compareSnapshots(before, snapshot(t, s.Source, true)); len(diffs) > 0 {
						t.Fatalf("the original changed:\n%s", strings.Join(diffs, "\n"))
					}
					must(t, os.Remove(filepath.Join(s.State, "fail-start-on")))
				},
				Config: migrationConfig(s, nodeName, target, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate),
				}},
				Check: checkLinked(s, target),
			},
		},
	})
}

// Changing target replaces the migration; with restore_on_destroy the data comes back first.
func TestAccK3sDataDirMigration_replace(t *testing.T) {
	s, nodeName := accStandin(t, standinOptions{})
	a, b := filepath.Join(s.Root, "mnt/a/k3s"), filepath.Join(s.Root, "mnt/b/k3s")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy:             checkOnSource(s),
		Steps: []resource.TestStep{
			{Config: migrationConfig(s, nodeName, a, "  restore_on_destroy = true"), Check: checkLinked(s, a)},
			{
				Config: migrationConfig(s, nodeName, b, "  restore_on_destroy = true"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionReplace),
				}},
				Check: checkLinked(s, b),
			},
		},
	})
}

func TestAccK3sDataDirMigration_configMethod(t *testing.T) {
	s, nodeName := accStandin(t, standinOptions{})
	target := filepath.Join(s.Root, "mnt/nvme/k3s")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy:             checkOnSource(s),
		Steps: []resource.TestStep{{
			Config: migrationConfig(s, nodeName, target, "  switch_method = \"config\"\n  restore_on_destroy = true"),
			Check: func(*terraform.State) error {
				cfg, err := os.ReadFile(s.Config)
				if err != nil || !strings.Contains(string(cfg), fmt.Sprintf("data-dir: %q", target)) {
					return fmt.Errorf("config file: %q %v", cfg, err)
				}
				if got := s.dataDirInUse("k3s"); got != target {
					return fmt.Errorf("k3s runs on %q", got)
				}
				return nil
			},
		}},
	})
}

func TestAccK3sDataDirMigration_badInputs(t *testing.T) {
	s, nodeName := accStandin(t, standinOptions{})
	cfg := func(source, target string) string {
		return acctest.ProviderConfigSSH(s.SSHD, nodeName) + fmt.Sprintf(`
resource "clusterstorage_k3s_data_dir_migration" "test" {
  node              = %q
  source            = %q
  target            = %q
  free_space_margin = "0"
}
`, nodeName, source, target)
	}
	steps := []resource.TestStep{
		{Config: cfg("var/lib/rancher/k3s", "/mnt/k3s"), ExpectError: regexp.MustCompile(`must\s+be\s+an\s+absolute\s+path`)},
		{Config: cfg(s.Source, "/mnt//k3s/"), ExpectError: regexp.MustCompile(`must\s+be\s+a\s+clean\s+path`)},
		{Config: cfg(s.Source, s.Source+"/moved"), ExpectError: regexp.MustCompile(`is\s+inside\s+source`)},
		{Config: cfg(s.Source, s.Source), ExpectError: regexp.MustCompile(`are\s+the\s+same\s+path`)},
		{Config: cfg(s.Source, "/"), ExpectError: regexp.MustCompile(`is\s+a\s+system\s+directory`)},
		{Config: cfg(filepath.Join(s.Root, "missing"), filepath.Join(s.Root, "t")), ExpectError: regexp.MustCompile(`(?s)preflight.*does\s+not\s+exist\s+on\s+the\s+node`)},
		{Config: cfg(s.Root, filepath.Join(s.Root+"-elsewhere", "t")), ExpectError: regexp.MustCompile(`does\s+not\s+look\s+like\s+a\s+k3s\s+data\s+directory`)},
		{Config: cfg(s.Source, s.Bin), ExpectError: regexp.MustCompile(`is\s+not\s+empty`)},
		{Config: cfg(s.Source, filepath.Join(s.Root, "t")) + `
resource "clusterstorage_k3s_data_dir_migration" "margin" {
  node              = "x"
  target            = "/mnt/x"
  free_space_margin = "-1Gi"
}`, ExpectError: regexp.MustCompile(`Invalid\s+free\s+space\s+margin`)},
	}
	for i := range steps {
		steps[i].PlanOnly = i < 5
	}
	resource.Test(t, resource.TestCase{ProtoV6ProviderFactories: acctest.ProviderFactories, Steps: steps})
	if err := checkOnSource(s)(nil); err != nil {
		t.Error(err)
	}
}
