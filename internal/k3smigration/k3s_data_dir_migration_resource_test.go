package k3smigration_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
)

// The acceptance tests run the resource through the Terraform CLI against the stand-in k3s node
// (see standin_test.go) reached through a real sshd, with the local cluster's node as the
// Kubernetes node: its name resolves to the stand-in's sshd through the provider's nodes map, and
// its kubelet (the cluster's real one, not the stand-in) is what the health check sees Ready.

const addr = "clusterstorage_k3s_data_dir_migration.test"

// accStandin starts the stand-in for an acceptance test (skipped without TF_ACC).
func accStandin(t *testing.T) (*standin, string) {
	t.Helper()
	nodeName := acctest.Node(t) // skips outside an acceptance run
	return newStandin(t, standinOptions{}), nodeName
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
		if got := s.dataDirInUse("k3s"); got != target || s.isActive() != "active" {
			return fmt.Errorf("k3s is %q on %q, want active on %s", s.isActive(), got, target)
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
		if got := s.dataDirInUse("k3s"); got != s.Source || s.isActive() != "active" {
			return fmt.Errorf("k3s is %q on %q, want active on %s", s.isActive(), got, s.Source)
		}
		return nil
	}
}

func TestAccK3sDataDirMigration_basic(t *testing.T) {
	acctest.RunsUnder(t, acctest.EveryCLI)
	s, nodeName := accStandin(t)
	target := filepath.Join(s.Root, "mnt/nvme/k3s")
	before := snapshot(t, s.Source)
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
					if diffs := compareSnapshots(before, snapshot(t, backup)); len(diffs) > 0 {
						return fmt.Errorf("the original changed:\n%s", strings.Join(diffs, "\n"))
					}
					if diffs := compareSnapshots(before, snapshot(t, target)); len(diffs) > 0 {
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
			// The settings that only matter while migrating update in place (no replace, which would
			// move the data back and then fail).
			{
				Config: strings.Replace(migrationConfig(s, nodeName, target, "  drain = true\n  keep_backup = false\n  measure_write_speed = true\n  carry_mounts = true"),
					`free_space_margin = "0"`, `free_space_margin = "1Mi"`, 1),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("drain"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("free_space_margin"), knownvalue.StringExact("1Mi")),
				},
				Check: checkLinked(s, target),
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

// A migration reverted by hand shows in the plan and is made again; the target then holds what
// k3s wrote there after the switch, so it is refused (never written over) until it is moved away.
func TestAccK3sDataDirMigration_driftAfterManualRevert(t *testing.T) {
	s, nodeName := accStandin(t)
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
				ExpectError: regexp.MustCompile(`holds\s+a\s+finished\s+migration`),
			},
			{
				PreConfig: func() {
					if err := checkOnSource(s)(nil); err != nil {
						t.Fatal(err)
					}
					must(t, os.Rename(target, target+".old"))
				},
				Config: migrationConfig(s, nodeName, target, ""),
				Check:  checkLinked(s, target),
			},
		},
	})
}

// A failure after the stop rolls back, writes no state, and a rerun succeeds.
func TestAccK3sDataDirMigration_startFailsRollsBack(t *testing.T) {
	s, nodeName := accStandin(t)
	target := filepath.Join(s.Root, "mnt/nvme/k3s")
	s.failStartOn(target)
	before := snapshot(t, s.Source)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: migrationConfig(s, nodeName, target, ""),
				// Whether the stand-in's k3s wrote to the target before its start failed is a matter of
				// timing: the rollback then copies that back first, and says so (seen under tofu).
				ExpectError: regexp.MustCompile(`(?s)step "start" failed.*Rolled\s+back:.*runs\s+again\s+on.*nothing\s+was\s+lost`),
			},
			{
				PreConfig: func() {
					if err := checkOnSource(s)(nil); err != nil {
						t.Fatal(err)
					}
					if diffs := compareSnapshots(before, snapshot(t, s.Source)); len(diffs) > 0 {
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
	s, nodeName := accStandin(t)
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
	s, nodeName := accStandin(t)
	// config cannot move local-path volumes (their PersistentVolumes name the old path): an agent without them.
	must(t, os.RemoveAll(filepath.Join(s.Source, "storage")))
	target := filepath.Join(s.Root, "mnt/nvme/k3s")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy:             checkOnSource(s),
		Steps: []resource.TestStep{{
			Config: migrationConfig(s, nodeName, target, "  switch_method = \"config\"\n  restore_on_destroy = true\n  measure_write_speed = true"),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("source_write_bytes_per_second"), knownvalue.Float64Func(positive)),
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("target_write_bytes_per_second"), knownvalue.Float64Func(positive)),
			},
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

func positive(v float64) error {
	if v <= 0 {
		return fmt.Errorf("%v is not positive", v)
	}
	return nil
}

func TestAccK3sDataDirMigration_badInputs(t *testing.T) {
	s, nodeName := accStandin(t)
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
		{Config: cfg(s.Source, "/mnt/k3s\ntarget=empty"), ExpectError: regexp.MustCompile(`holds\s+a\s+control\s+character`)},
		{Config: cfg(filepath.Join(s.Root, "missing"), filepath.Join(s.Root, "t")), ExpectError: regexp.MustCompile(`(?s)preflight.*does\s+not\s+exist\s+on\s+the\s+node`)},
		{Config: cfg(s.Root, filepath.Join(s.Root+"-elsewhere", "t")), ExpectError: regexp.MustCompile(`does\s+not\s+look\s+like\s+a\s+k3s\s+data\s+directory`)},
		{Config: cfg(s.Source, s.Bin), ExpectError: regexp.MustCompile(`is\s+not\s+empty`)},
		{Config: cfg(s.Source, filepath.Join(s.Root, "t")) + `
resource "clusterstorage_k3s_data_dir_migration" "margin" {
  node              = "x"
  target            = "/mnt/x"
  free_space_margin = "-1Gi"
}`, ExpectError: regexp.MustCompile(`Invalid\s+free\s+space\s+margin`)},
		{Config: cfg(s.Source, filepath.Join(s.Root, "t")) + `
resource "clusterstorage_k3s_data_dir_migration" "carry" {
  node          = "x"
  target        = "/mnt/x"
  switch_method = "config"
  carry_mounts  = true
}`, ExpectError: regexp.MustCompile(`carry_mounts\s+needs\s+switch_method\s+=\s+"symlink"`)},
	}
	for i := range steps {
		steps[i].PlanOnly = i < 6
	}
	resource.Test(t, resource.TestCase{ProtoV6ProviderFactories: acctest.ProviderFactories, Steps: steps})
	if err := checkOnSource(s)(nil); err != nil {
		t.Error(err)
	}
}

// fakeKubelet is a Node object of the test's own in the real API server, kept Ready by the test as
// a kubelet would: it renews the node lease, and finishes the deletion of pods evicted from it
// (a kubelet deletes a pod with grace period 0 once its containers stopped). The node runs nothing,
// so draining it disturbs no one else's pods on the shared test cluster.
type fakeKubelet struct {
	name       string
	sawCordon  atomic.Bool
	podsFinish atomic.Int32
}

func startFakeKubelet(t *testing.T) *fakeKubelet {
	t.Helper()
	client := acctest.Kube(t)
	ctx, cancel := context.WithCancel(context.Background())
	k := &fakeKubelet{name: acctest.RandomName("k3sm-node")}
	_, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: k.name,
		Labels: map[string]string{"kubernetes.io/hostname": k.name}}}, metav1.CreateOptions{})
	must(t, err)
	t.Cleanup(func() {
		cancel()
		_ = client.CoreV1().Nodes().Delete(context.Background(), k.name, metav1.DeleteOptions{})
		_ = client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Delete(context.Background(), k.name, metav1.DeleteOptions{})
	})
	setReady := func() error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			n, err := client.CoreV1().Nodes().Get(ctx, k.name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			now := metav1.Now()
			n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
				Message: "fake kubelet", LastHeartbeatTime: now, LastTransitionTime: now}}
			n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}
			_, err = client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
			return err
		})
	}
	must(t, setReady())
	duration := int32(40)
	now := metav1.NewMicroTime(time.Now())
	_, err = client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: k.name, Namespace: corev1.NamespaceNodeLease},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &k.name, LeaseDurationSeconds: &duration, RenewTime: &now},
	}, metav1.CreateOptions{})
	must(t, err)
	go func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if lease, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, k.name, metav1.GetOptions{}); err == nil {
				now := metav1.NewMicroTime(time.Now())
				lease.Spec.RenewTime = &now
				_, _ = client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Update(ctx, lease, metav1.UpdateOptions{})
			}
			if i%10 == 0 {
				_ = setReady()
			}
			if n, err := client.CoreV1().Nodes().Get(ctx, k.name, metav1.GetOptions{}); err == nil && n.Spec.Unschedulable {
				k.sawCordon.Store(true)
			}
			pods, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + k.name})
			if err != nil {
				continue
			}
			for _, p := range pods.Items {
				if p.DeletionTimestamp != nil {
					zero := int64(0)
					if client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}) == nil {
						k.podsFinish.Add(1)
					}
				}
			}
		}
	}()
	return k
}

// drain = true cordons the node and evicts its pods through the API before the stop, and
// uncordons it after; the health check sees the (fake) kubelet's lease renewed after the start.
// A pod running on another (real) node is left alone.
func TestAccK3sDataDirMigration_drain(t *testing.T) {
	k := startFakeKubelet(t)
	s := newStandin(t, standinOptions{})
	client := acctest.Kube(t)
	newPod := func(node, image string) *corev1.Pod {
		pod, err := client.CoreV1().Pods("default").Create(context.Background(), &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: acctest.RandomName("k3sm-pod"), Namespace: "default"},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: image, ImagePullPolicy: corev1.PullNever}},
				Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}},
		}, metav1.CreateOptions{})
		must(t, err)
		t.Cleanup(func() {
			zero := int64(0)
			_ = client.CoreV1().Pods("default").Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		})
		return pod
	}
	pod := newPod(k.name, "pause")
	bystander := newPod(acctest.Node(t), acctest.PauseImage)
	target := filepath.Join(s.Root, "mnt/nvme/k3s")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{{
			Config: migrationConfig(s, k.name, target, "  drain = true"),
			Check: resource.ComposeTestCheckFunc(checkLinked(s, target), func(*terraform.State) error {
				n, err := client.CoreV1().Nodes().Get(context.Background(), k.name, metav1.GetOptions{})
				if err != nil || n.Spec.Unschedulable {
					return fmt.Errorf("node not uncordoned: %v", err)
				}
				if !k.sawCordon.Load() {
					return fmt.Errorf("the node was never seen cordoned")
				}
				if _, err := client.CoreV1().Pods("default").Get(context.Background(), pod.Name, metav1.GetOptions{}); err == nil {
					return fmt.Errorf("pod %s was not evicted", pod.Name)
				}
				other, err := client.CoreV1().Pods("default").Get(context.Background(), bystander.Name, metav1.GetOptions{})
				if err != nil || other.UID != bystander.UID || other.DeletionTimestamp != nil {
					return fmt.Errorf("pod %s on node %s, not the one drained, was touched: %v", bystander.Name, bystander.Spec.NodeName, err)
				}
				return nil
			}),
		}},
	})
}
