package localpv_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/importmark"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

const addr = "clusterstorage_local_pv.test"

// fixture is one test's cluster node, reached through its own sshd, and a scratch directory on it.
type fixture struct {
	t      *testing.T
	client kubernetes.Interface
	sshd   *acctest.SSHD
	node   string
	root   string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	client := acctest.Kube(t)
	return &fixture{t: t, client: client, sshd: acctest.StartSSHD(t), node: acctest.Node(t), root: t.TempDir()}
}

func (f *fixture) config(body string) string {
	return acctest.ProviderConfigSSH(f.sshd, f.node) + body
}

func TestAccLocalPV_lifecycle(t *testing.T) {
	acctest.RunsUnder(t, acctest.EveryCLI, acctest.OldestTerraform)
	f := newFixture(t)
	name := acctest.RandomName("acc-pv")
	dir := filepath.Join(f.root, "disks", "vol1")
	class := acctest.RandomName("acc-local")
	volume := func(capacity, mode, extra string) string {
		return f.config(acctest.LoadConfig(t, "lifecycle.tf", name, f.node, dir, capacity, class, mode, extra))
	}

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy:             f.checkDestroyed(name),
		Steps: []resource.TestStep{
			{
				Config: volume("1Gi", "0750", ""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("phase"), knownvalue.StringExact("Available")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("directory_exists"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("reclaim_policy"), knownvalue.StringExact("Retain")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("access_modes"), knownvalue.SetExact([]knownvalue.Check{knownvalue.StringExact("ReadWriteOnce")})),
				},
				Check: resource.ComposeTestCheckFunc(
					checkDirMode(dir, 0o750),
					f.checkPV(name, func(pv *corev1.PersistentVolume) error {
						terms := pv.Spec.NodeAffinity.Required.NodeSelectorTerms
						if pv.Spec.Local.Path != dir || len(terms) != 1 || terms[0].MatchExpressions[0].Key != "kubernetes.io/hostname" ||
							terms[0].MatchExpressions[0].Values[0] != f.node {
							return fmt.Errorf("PV not pinned to %s at %s: %+v", f.node, dir, pv.Spec)
						}
						return nil
					}),
					// A real pod on the node writes through the volume into the directory.
					f.writeThroughPod(class, dir),
				),
			},
			{
				// Capacity growth, labels and the directory mode change in place.
				Config: volume("2Gi", "0770", `labels = { tier = "nvme" }`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeTestCheckFunc(
					checkDirMode(dir, 0o770),
					f.checkPV(name, func(pv *corev1.PersistentVolume) error {
						if c := pv.Spec.Capacity[corev1.ResourceStorage]; c.Cmp(k8sresource.MustParse("2Gi")) != 0 || pv.Labels["tier"] != "nvme" {
							return fmt.Errorf("capacity %s labels %v", c.String(), pv.Labels)
						}
						return nil
					}),
				),
			},
			{
				ResourceName:            addr,
				ImportState:             true,
				ImportStateId:           name,
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"timeouts"},
			},
			{
				// Shrinking replaces the volume.
				Config: volume("512Mi", "0770", `labels = { tier = "nvme" }`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionReplace),
				}},
				Check: f.checkPV(name, func(pv *corev1.PersistentVolume) error {
					if pv.Status.Phase != corev1.VolumeAvailable {
						return fmt.Errorf("replaced volume is %s, want Available", pv.Status.Phase)
					}
					return nil
				}),
			},
		},
	})
	// Destroy kept the data by default.
	if _, err := os.Stat(filepath.Join(dir, "hello")); err != nil {
		t.Errorf("the file written through the volume is gone after destroy: %v", err)
	}
}

func TestAccLocalPV_disappears(t *testing.T) {
	f := newFixture(t)
	name := acctest.RandomName("acc-pv")
	dir := filepath.Join(f.root, "vol")
	config := f.config(acctest.LoadConfig(t, "disappears.tf", name, f.node, dir))

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy:             f.checkDestroyed(name),
		Steps: []resource.TestStep{
			{
				// The volume is deleted out of band: the next plan creates it again.
				Config: config,
				Check: func(*terraform.State) error {
					return f.client.CoreV1().PersistentVolumes().Delete(context.Background(), name, metav1.DeleteOptions{})
				},
				ExpectNonEmptyPlan: true,
			},
			{
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate),
				}},
				// The directory is deleted out of band: the next plan updates in place to make it again.
				Check: func(*terraform.State) error {
					return os.Remove(dir)
				},
				ExpectNonEmptyPlan: true,
			},
			{
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("directory_exists"), knownvalue.Bool(true)),
				}},
				Check: checkDirMode(dir, 0o755),
			},
		},
	})
}

// TestAccLocalPV_deleteDirectory: a directory is only removed when asked, and one holding data
// only with force_delete_data; a refused destroy deletes nothing.
func TestAccLocalPV_deleteDirectory(t *testing.T) {
	f := newFixture(t)
	name := acctest.RandomName("acc-pv")
	dir := filepath.Join(f.root, "vol")
	config := func(force bool) string {
		return f.config(acctest.LoadConfig(t, "delete_directory.tf", name, f.node, dir, force))
	}

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy: resource.ComposeTestCheckFunc(f.checkDestroyed(name), func(*terraform.State) error {
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				return fmt.Errorf("directory %s still there after destroy with force_delete_data (stat: %v)", dir, err)
			}
			return nil
		}),
		Steps: []resource.TestStep{
			{
				Config: config(false),
				Check: func(*terraform.State) error {
					return os.WriteFile(filepath.Join(dir, "precious.db"), []byte("data"), 0o600)
				},
			},
			{
				Config:      config(false),
				Destroy:     true,
				ExpectError: acctest.ErrorWords("is not empty, and delete_directory_on_destroy only removes empty directories"),
			},
			{
				Config: config(false),
				Check: resource.ComposeTestCheckFunc(
					f.checkPV(name, func(*corev1.PersistentVolume) error { return nil }),
					func(*terraform.State) error {
						_, err := os.Stat(filepath.Join(dir, "precious.db"))
						return err
					},
				),
			},
			{Config: config(true)},
		},
	})
}

// TestAccLocalPV_emptyDirectoryRemoved: an empty directory goes without force_delete_data.
func TestAccLocalPV_emptyDirectoryRemoved(t *testing.T) {
	f := newFixture(t)
	name := acctest.RandomName("acc-pv")
	dir := filepath.Join(f.root, "vol")
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy: func(*terraform.State) error {
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				return fmt.Errorf("empty directory %s still there (stat: %v)", dir, err)
			}
			return nil
		},
		Steps: []resource.TestStep{{
			Config: f.config(acctest.LoadConfig(t, "empty_directory_removed.tf", name, f.node, dir)),
		}},
	})
}

// TestAccLocalPV_sshRefusals: a host key that does not match and a key the node does not accept
// are refused with messages that say so, and nothing is created.
func TestAccLocalPV_sshRefusals(t *testing.T) {
	f := newFixture(t)
	other := acctest.StartSSHD(t)
	name := acctest.RandomName("acc-pv")
	volume := acctest.LoadConfig(t, "ssh_refusals.tf", name, f.node, filepath.Join(f.root, "vol"))
	nodeEntry := func(extra string) string {
		return acctest.LoadConfig(t, "ssh_refusals_2.tf", acctest.Kubeconfig(), f.sshd.User, f.sshd.ClientKeyPath, f.node, f.sshd.Host, f.sshd.Port, extra)
	}

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy:             f.checkDestroyed(name),
		Steps: []resource.TestStep{
			{
				// The node presents a host key other than the pinned one.
				Config:      nodeEntry(fmt.Sprintf("host_key = %q", other.HostPublicKey)) + volume,
				ExpectError: regexp.MustCompile(`(?i)host key`),
			},
			{
				// The node does not accept this client key.
				Config: nodeEntry(fmt.Sprintf("host_key = %q, private_key_path = %q", f.sshd.HostPublicKey,
					other.ClientKeyPath)) + volume,
				ExpectError: regexp.MustCompile(`(?i)authenticat`),
			},
		},
	})
}

func TestAccLocalPV_badInput(t *testing.T) {
	cases := map[string]struct{ body, want string }{
		"name":            {`name = "Vol_1"`, `Did you mean "vol-1"?`},
		"label key":       {`labels = { "disk type" = "nvme" }`, `Invalid label key`},
		"relative path":   {`path = "mnt/disks"`, `is not absolute`},
		"etc":             {`path = "/etc/data"`, `belongs to the operating system`},
		"root":            {`path = "/"`, `is a system directory`},
		"dotdot":          {`path = "/mnt/disks/../../etc"`, `is not clean`},
		"newline":         {`path = "/mnt/disks/a\nb"`, `Attribute path: "/mnt/disks/a\nb" holds a control character (U+000A, a newline) at byte 12`},
		"kubelet":         {`path = "/var/lib/kubelet/pods/x"`, `belongs to the operating system`},
		"capacity":        {`capacity = "ten gigs"`, `is not a positive Kubernetes quantity`},
		"zero capacity":   {`capacity = "0"`, `is not a positive Kubernetes quantity`},
		"block with dir":  {`volume_mode = "Block"`, `set create_directory = false`},
		"access mode":     {`access_modes = ["ReadWriteSometimes"]`, `value must be one of`},
		"reclaim recycle": {`reclaim_policy = "Recycle"`, `value must be one of`},
		"mode":            {`directory_mode = "rwx"`, `must be an octal mode`},
		"force alone":     {`force_delete_data = true`, `only matters when delete_directory_on_destroy`},
		"affinity values": {`node_affinity = [{ key = "disk", operator = "Exists", values = ["x"] }]`, `takes no values`},
		"affinity host":   {`node_affinity = [{ key = "kubernetes.io/hostname", operator = "In", values = ["x"] }]`, `set node instead`},
	}
	defaults := map[string]string{"name": `"ok"`, "node": `"n1"`, "path": `"/mnt/disks/vol1"`, "capacity": `"1Gi"`}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			body := "  " + tc.body + "\n"
			for k, v := range defaults {
				if !strings.HasPrefix(tc.body, k+" ") {
					body += "  " + k + " = " + v + "\n"
				}
			}
			resource.ParallelTest(t, resource.TestCase{
				ProtoV6ProviderFactories: acctest.ProviderFactories,
				Steps: []resource.TestStep{{
					Config:      acctest.ProviderConfig() + "resource \"clusterstorage_local_pv\" \"bad\" {\n" + body + "}\n",
					PlanOnly:    true,
					ExpectError: acctest.ErrorWords(tc.want),
				}},
			})
		})
	}
}

// TestAccLocalPV_applyErrors: problems only the cluster or the node can reveal fail the apply
// with a clear message and leave nothing behind.
func TestAccLocalPV_applyErrors(t *testing.T) {
	f := newFixture(t)
	file := filepath.Join(f.root, "a-file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:      f.config(acctest.LoadConfig(t, "apply_errors.tf", filepath.Join(f.root, "vol"))),
				ExpectError: acctest.ErrorWords(`node "no-such-node" not found in the cluster; its nodes are: ` + f.node),
			},
			{
				Config:      f.config(acctest.LoadConfig(t, "apply_errors_2.tf", f.node, file)),
				ExpectError: acctest.ErrorWords("exists and is not a directory"),
			},
		},
	})
}

// TestAccLocalPV_manyOnOneNode: 30 volumes on one node, applied with Terraform's default
// parallelism of 10, share one SSH connection.
func TestAccLocalPV_manyOnOneNode(t *testing.T) {
	f := newFixture(t)
	prefix := acctest.RandomName("acc-many")
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{{
			Config: f.config(acctest.LoadConfig(t, "many_on_one_node.tf", prefix, f.node, f.root)),
			Check: func(*terraform.State) error {
				entries, err := os.ReadDir(f.root)
				if err != nil || len(entries) != 30 {
					return fmt.Errorf("want 30 directories in %s, got %d (%v)", f.root, len(entries), err)
				}
				if logins := strings.Count(f.sshd.Log(), "Accepted publickey"); logins != 1 {
					return fmt.Errorf("30 volumes used %d SSH logins, want 1", logins)
				}
				return nil
			},
		}},
	})
}

func (f *fixture) checkPV(name string, check func(*corev1.PersistentVolume) error) resource.TestCheckFunc {
	return func(*terraform.State) error {
		pv, err := f.client.CoreV1().PersistentVolumes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading PersistentVolume %s: %w", name, err)
		}
		return check(pv)
	}
}

func (f *fixture) checkDestroyed(name string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		_, err := f.client.CoreV1().PersistentVolumes().Get(context.Background(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("PersistentVolume %s still exists after destroy", name)
	}
}

// writeThroughPod binds a claim to the volume, runs a pod that writes a file into it, checks that
// the file appears in the directory on the node, and removes pod and claim again.
func (f *fixture) writeThroughPod(class, dir string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		ctx := context.Background()
		ns, claim := "default", acctest.RandomName("acc-claim")
		pvc := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: ns},
			Spec: corev1.PersistentVolumeClaimSpec{
				StorageClassName: &class,
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: k8sresource.MustParse("1Gi")}},
			},
		}
		image, pull := acctest.BusyboxImage, corev1.PullNever
		if !acctest.LocalCluster() {
			image, pull = "busybox:1.36", corev1.PullIfNotPresent
		}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: ns},
			Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{
					Name: "writer", Image: image, ImagePullPolicy: pull,
					Command:      []string{"sh", "-c", "echo hello from a pod > /data/hello"},
					VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
				}},
				Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
					PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
				}}},
			},
		}
		defer acctest.DeletePodAndClaim(f.t, f.client, ns, claim, claim)
		if _, err := f.client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
			return err
		}
		if _, err := f.client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return err
		}
		if err := acctest.WaitForPod(ctx, f.client, ns, claim, 2*time.Minute); err != nil {
			return err
		}
		got, err := os.ReadFile(filepath.Join(dir, "hello"))
		if err != nil || strings.TrimSpace(string(got)) != "hello from a pod" {
			return fmt.Errorf("file written by the pod: %q, %v", got, err)
		}
		return nil
	}
}

func checkDirMode(dir string, want os.FileMode) resource.TestCheckFunc {
	return func(*terraform.State) error {
		fi, err := os.Stat(dir)
		if err != nil {
			return err
		}
		if !fi.IsDir() || fi.Mode().Perm() != want {
			return fmt.Errorf("%s: mode %s, want directory with %s", dir, fi.Mode(), want)
		}
		return nil
	}
}

// TestAccLocalPV_replacedOutOfBand: someone deletes the volume and makes another under the same
// name (at the same path). The refresh sees another UID: that volume is not ours, so it is not
// adopted, and nothing of it or of the directory is deleted; creating ours again fails with a hint
// to import it.
func TestAccLocalPV_replacedOutOfBand(t *testing.T) {
	f := newFixture(t)
	name := acctest.RandomName("acc-pv")
	dir := filepath.Join(f.root, "vol")
	config := f.config(acctest.LoadConfig(t, "replaced_out_of_band.tf", name, f.node, dir))
	var foreignUID string
	t.Cleanup(func() {
		_ = f.client.CoreV1().PersistentVolumes().Delete(context.Background(), name, metav1.DeleteOptions{})
	})

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: config,
				Check: func(*terraform.State) error {
					if err := os.WriteFile(filepath.Join(dir, "theirs.db"), []byte("data"), 0o600); err != nil {
						return err
					}
					ctx := context.Background()
					pv, err := f.client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
					if err != nil {
						return err
					}
					if err := f.client.CoreV1().PersistentVolumes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
						return err
					}
					if err := kube.Poll(ctx, 100*time.Millisecond, time.Minute, "the volume to be deleted", func(ctx context.Context) (bool, string, error) {
						_, err := f.client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
						return apierrors.IsNotFound(err), "", nil
					}); err != nil {
						return err
					}
					pv.ObjectMeta = metav1.ObjectMeta{Name: name, Labels: map[string]string{"owner": "someone-else"}}
					pv.Status = corev1.PersistentVolumeStatus{}
					made, err := f.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
					if err != nil {
						return err
					}
					foreignUID = string(made.UID)
					return nil
				},
				ExpectNonEmptyPlan: true,
			},
			{
				Config:      config,
				ExpectError: acctest.ErrorWords(`Creating PersistentVolume ` + name + ` failed`),
			},
			{
				Config:      config,
				ExpectError: acctest.ErrorWords(`terraform import clusterstorage_local_pv.<name> ` + name),
			},
		},
	})
	pv, err := f.client.CoreV1().PersistentVolumes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil || string(pv.UID) != foreignUID || pv.Labels["owner"] != "someone-else" {
		t.Errorf("the other volume was touched: %v (uid %s, want %s)", err, pv.GetUID(), foreignUID)
	}
	if _, err := os.Stat(filepath.Join(dir, "theirs.db")); err != nil {
		t.Errorf("data in the directory was deleted: %v", err)
	}
}

// TestAccLocalPV_leftByAnInterruptedApply: a volume that carries the pending mark of a create whose
// provider died (importmark.PendingAnnotation, long enough ago) is taken over by the next create of
// its name, its changeable fields set as planned; one at another path is refused with what to do.
// (The fault matrix kills a real provider mid-create: internal/faults.)
func TestAccLocalPV_leftByAnInterruptedApply(t *testing.T) {
	f := newFixture(t)
	n, err := f.client.CoreV1().Nodes().Get(context.Background(), f.node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	leftover := func(name, dir string) {
		pv := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
				importmark.PendingAnnotation: time.Now().Add(-time.Minute).UTC().Format(time.RFC3339Nano),
			}},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:               corev1.ResourceList{corev1.ResourceStorage: k8sresource.MustParse("1Gi")},
				AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: dir}},
				NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{n.Labels["kubernetes.io/hostname"]}}},
				}}}},
			},
		}
		if _, err := f.client.CoreV1().PersistentVolumes().Create(context.Background(), pv, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = f.client.CoreV1().PersistentVolumes().Delete(context.Background(), name, metav1.DeleteOptions{}) //nolint:errcheck // destroyed already
		})
	}
	same, other := acctest.RandomName("acc-pv"), acctest.RandomName("acc-pv")
	dir := filepath.Join(f.root, "vol")
	leftover(same, dir)
	leftover(other, filepath.Join(f.root, "elsewhere"))
	config := func(name string) string {
		return f.config(acctest.LoadConfig(t, "left_by_an_interrupted_apply.tf", name, f.node, dir))
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{
			{Config: config(other), ExpectError: acctest.ErrorWords("was left by an apply that was interrupted while it created it")},
			{
				Config: config(same),
				Check: func(*terraform.State) error {
					// The mark goes a moment after the create returns (importmark.ClearLater).
					return kube.Poll(context.Background(), 100*time.Millisecond, 10*time.Second, "the volume taken over to be set and unmarked", func(ctx context.Context) (bool, string, error) {
						pv, err := f.client.CoreV1().PersistentVolumes().Get(ctx, same, metav1.GetOptions{})
						if err != nil {
							return false, "", err
						}
						_, marked := pv.Annotations[importmark.PendingAnnotation]
						return !marked && pv.Labels["app"] == "db" && pv.Spec.Capacity.Storage().String() == "2Gi",
							fmt.Sprintf("annotations %v, labels %v, capacity %s", pv.Annotations, pv.Labels, pv.Spec.Capacity.Storage()), nil
					})
				},
			},
			{Config: config(same), PlanOnly: true},
		},
	})
}

// TestAccLocalPV_symlinks: an update does not change the mode of what a symbolic link put in
// place of the directory points to, and a destroy does not delete a directory that a symbolic
// link placed above it now leads into a system directory.
func TestAccLocalPV_symlinks(t *testing.T) {
	f := newFixture(t)
	t.Run("update", func(t *testing.T) {
		name := acctest.RandomName("acc-pv")
		dir, elsewhere := filepath.Join(f.root, "vol"), filepath.Join(f.root, "elsewhere")
		config := func(mode string) string {
			return f.config(acctest.LoadConfig(t, "symlinks.tf", name, f.node, dir, mode))
		}
		resource.Test(t, resource.TestCase{
			PreCheck:                 func() { acctest.PreCheck(t) },
			ProtoV6ProviderFactories: acctest.ProviderFactories,
			CheckDestroy:             f.checkDestroyed(name),
			Steps: []resource.TestStep{
				{
					Config: config("0750"),
					Check: func(*terraform.State) error {
						if err := os.Mkdir(elsewhere, 0o700); err != nil {
							return err
						}
						if err := os.Remove(dir); err != nil {
							return err
						}
						return os.Symlink(elsewhere, dir)
					},
					ExpectNonEmptyPlan: true,
				},
				{
					Config:      config("0777"),
					ExpectError: acctest.ErrorWords("exists and is not a directory"),
					Check:       checkDirMode(elsewhere, 0o700),
				},
			},
		})
		if fi, err := os.Stat(elsewhere); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("the link's target changed: %v (%v)", fi.Mode(), err)
		}
	})
	t.Run("destroy", func(t *testing.T) {
		name := acctest.RandomName("acc-pv")
		parent := filepath.Join(f.root, "parent")
		dir := filepath.Join(parent, "vol")
		// A scratch directory inside /run, a tree the path check protects.
		system, err := os.MkdirTemp("/run", "clusterstorage-acc-") //nolint:usetesting // must be in /run, which t.TempDir is not.
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(system) })
		config := func(manageDir bool, mode string) string {
			return f.config(acctest.LoadConfig(t, "symlinks_2.tf", name, f.node, dir, manageDir, manageDir, manageDir, mode))
		}
		resource.Test(t, resource.TestCase{
			PreCheck:                 func() { acctest.PreCheck(t) },
			ProtoV6ProviderFactories: acctest.ProviderFactories,
			CheckDestroy:             f.checkDestroyed(name),
			Steps: []resource.TestStep{
				{
					Config: config(true, "0755"),
					Check: func(*terraform.State) error {
						// The data moves into /run, and parent becomes a link to it.
						if err := os.WriteFile(filepath.Join(dir, "data"), []byte("x"), 0o600); err != nil {
							return err
						}
						if err := os.Rename(dir, filepath.Join(system, "vol")); err != nil {
							return err
						}
						if err := os.Remove(parent); err != nil {
							return err
						}
						return os.Symlink(system, parent)
					},
				},
				{
					Config:      config(true, "0755"),
					Destroy:     true,
					ExpectError: acctest.ErrorWords("Refusing to delete " + dir),
				},
				{
					// An update does not touch the directory behind the link either.
					Config:      config(true, "0700"),
					ExpectError: acctest.ErrorWords("leads through a symbolic link to " + filepath.Join(system, "vol")),
				},
				{
					Config: config(false, "0755"),
					Check: func(*terraform.State) error {
						_, err := os.Stat(filepath.Join(system, "vol", "data"))
						return err
					},
				},
			},
		})
		if _, err := os.Stat(filepath.Join(system, "vol", "data")); err != nil {
			t.Errorf("the data behind the link was deleted: %v", err)
		}
	})
}

// TestAccLocalPV_importUnpinned: a local volume without a kubernetes.io/hostname term cannot be
// imported; the error says how to pin it.
func TestAccLocalPV_importUnpinned(t *testing.T) {
	acctest.RunsUnder(t, acctest.EveryCLI)
	f := newFixture(t)
	name := acctest.RandomName("acc-pv")
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: k8sresource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: filepath.Join(f.root, "vol")}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}},
			}}}},
		},
	}
	if _, err := f.client.CoreV1().PersistentVolumes().Create(context.Background(), pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = f.client.CoreV1().PersistentVolumes().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	// An import step's own configuration is used as written: it names the provider's source, or
	// OpenTofu would look for it in its own registry instead of using the one under test.
	config := `terraform {
  required_providers {
    clusterstorage = { source = "registry.terraform.io/hashicorp/clusterstorage" }
  }
}
` + f.config(acctest.LoadConfig(t, "import_unpinned.tf", name, f.node, pv.Spec.Local.Path))
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{{
			Config:        config,
			ResourceName:  addr,
			ImportState:   true,
			ImportStateId: name,
			ExpectError:   acctest.ErrorWords("Volume not pinned to a node"),
		}, {
			Config:        config,
			ResourceName:  addr,
			ImportState:   true,
			ImportStateId: name,
			ExpectError:   acctest.ErrorWords("Pin it to its node"),
		}},
	})
}
