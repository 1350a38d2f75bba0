package localpv_test

import (
	"context"
	"fmt"
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
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
)

// TestAccLocalPV_otherNode: a volume on node 2, a machine of its own with its own sshd and disk.
// Its directory is made on node 2 (on its data disk) and not on node 1; a pod using its claim is
// scheduled onto node 2 by the volume's node affinity and writes there; destroy with
// delete_directory_on_destroy removes the directory on node 2 only.
func TestAccLocalPV_otherNode(t *testing.T) {
	nodes := acctest.RequireNodes(t, 2)
	first, second := nodes[0], nodes[1]
	if len(second.DataDisks) == 0 {
		t.Fatalf("node %s has no data disk in %s", second.Name, acctest.NodesFile())
	}
	client := acctest.Kube(t)
	name := acctest.RandomName("acc-pv")
	class := acctest.RandomName("acc-local")
	dir := filepath.Join(second.DataDisks[0], name)
	config := acctest.ProviderConfigNodes(nodes...) + acctest.LoadConfig(t, "other_node.tf", name, second.Name, dir, class)

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy: func(*terraform.State) error {
			if second.Exists(t, dir) {
				return fmt.Errorf("directory %s still on node %s after destroy", dir, second.Name)
			}
			return nil
		},
		Steps: []resource.TestStep{{
			Config: config,
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("directory_exists"), knownvalue.Bool(true)),
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("node"), knownvalue.StringExact(second.Name)),
			},
			Check: resource.ComposeTestCheckFunc(
				func(*terraform.State) error {
					if !second.Exists(t, dir) {
						return fmt.Errorf("directory %s is not on node %s", dir, second.Name)
					}
					if first.Exists(t, dir) {
						return fmt.Errorf("directory %s was made on node %s too, the volume is on %s", dir, first.Name, second.Name)
					}
					// The directory is on node 2's data disk, a file system of its own.
					fs := strings.TrimSpace(second.MustRun(t, `stat -f -c %T "$1"`, dir))
					if fs != "ext2/ext3" && fs != "ext4" {
						return fmt.Errorf("directory %s is on a %s file system, want the data disk's ext4", dir, fs)
					}
					return nil
				},
				writeOnNode(t, client, class, second, dir),
			),
		}},
	})
}

// writeOnNode binds a claim of class, runs a pod that writes a file into it without naming a
// node, and checks that the scheduler placed it on want (the volume's node affinity) and that the
// file is in dir on that node.
func writeOnNode(t *testing.T, client kubernetes.Interface, class string, want acctest.ClusterNode, dir string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		ctx := context.Background()
		ns, claim := "default", acctest.RandomName("acc-claim")
		defer acctest.DeletePodAndClaim(t, client, ns, claim, claim)
		pvc := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: ns},
			Spec: corev1.PersistentVolumeClaimSpec{
				StorageClassName: &class,
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: k8sresource.MustParse("1Gi")}},
			},
		}
		if _, err := client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
			return err
		}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: ns},
			Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{
					Name: "writer", Image: acctest.BusyboxImage, ImagePullPolicy: corev1.PullNever,
					Command:      []string{"sh", "-c", "echo written on $NODE > /data/hello"},
					Env:          []corev1.EnvVar{{Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}},
					VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
				}},
				Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
					PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
				}}},
			},
		}
		if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return err
		}
		if err := acctest.WaitForPod(ctx, client, ns, claim, 2*time.Minute); err != nil {
			return err
		}
		got, err := client.CoreV1().Pods(ns).Get(ctx, claim, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got.Spec.NodeName != want.Name {
			return fmt.Errorf("pod ran on %s, want %s where the volume is", got.Spec.NodeName, want.Name)
		}
		out, err := want.Run(t, `cat "$1/hello"`, dir)
		if err != nil {
			return err
		}
		if strings.TrimSpace(out) != "written on "+want.Name {
			return fmt.Errorf("file on node %s holds %q", want.Name, out)
		}
		return nil
	}
}

// TestAccLocalPV_nodePoweredOff: one apply of two volumes, on node 1 and on node 2, while node 2
// is powered off. The apply fails with an error naming node 2; the volume on node 1 is made and in
// state, nothing of node 2's volume exists; once node 2 is back the next apply creates only the
// missing volume, and then nothing is left to do.
func TestAccLocalPV_nodePoweredOff(t *testing.T) {
	nodes := acctest.RequireNodesAlone(t, 2)
	first, second := nodes[0], nodes[1]
	if second.MachineDir == "" {
		t.Fatalf("node %s is not a machine of its own in %s", second.Name, acctest.NodesFile())
	}
	client := acctest.Kube(t)
	nameA, nameB := acctest.RandomName("acc-pv"), acctest.RandomName("acc-pv")
	dirA := filepath.Join(t.TempDir(), "a")
	if first.MachineDir != "" {
		dirA = filepath.Join(first.DataDisks[0], nameA)
	}
	dirB := filepath.Join(second.DataDisks[0], nameB)
	config := acctest.ProviderConfigNodes(nodes...) + acctest.LoadConfig(t, "node_powered_off.tf", nameA, first.Name, dirA, nameB, second.Name, dirB)
	off := false
	t.Cleanup(func() {
		if off {
			second.PowerOn(t)
		}
	})

	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		CheckDestroy: func(*terraform.State) error {
			for _, name := range []string{nameA, nameB} {
				if _, err := client.CoreV1().PersistentVolumes().Get(context.Background(), name, metav1.GetOptions{}); err == nil {
					return fmt.Errorf("PersistentVolume %s still exists", name)
				}
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				PreConfig: func() {
					second.PowerOff(t)
					off = true
				},
				Config: config,
				// The error names the node and what happened to the connection.
				ExpectError: regexp.MustCompile(`Checking ` + regexp.QuoteMeta(dirB) + ` on ` + regexp.QuoteMeta(second.Name) + ` failed[\s\S]*connection refused`),
			},
			{
				PreConfig: func() {
					// Nothing of the volume on the powered-off node was made.
					if _, err := client.CoreV1().PersistentVolumes().Get(context.Background(), nameB, metav1.GetOptions{}); err == nil {
						t.Errorf("PersistentVolume %s was created although its node was off", nameB)
					}
					second.PowerOn(t)
					off = false
				},
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					// The failed apply recorded only what it made.
					plancheck.ExpectResourceAction("clusterstorage_local_pv.a", plancheck.ResourceActionNoop),
					plancheck.ExpectResourceAction("clusterstorage_local_pv.b", plancheck.ResourceActionCreate),
				}},
				Check: func(*terraform.State) error {
					if !second.Exists(t, dirB) {
						return fmt.Errorf("directory %s is not on node %s", dirB, second.Name)
					}
					return nil
				},
			},
			{
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
			},
		},
	})
}
