package volumemigration_test

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
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	corev1 "k8s.io/api/core/v1"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/volumemigration"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/volumes"
)

// crossNode is a claim "data" on a local volume of node 1 (this machine) that a writer writes
// records to, and an Available local volume of the target class (with sameClass, the source's
// class: a move to another node only) on node 2, in a directory of its own on node 2's data disk.
type crossNode struct {
	*fixture
	second         acctest.ClusterNode
	src, dst       string // the volumes' directories, on node 1 and on node 2
	srcPV, dstPV   string
	secondHostname string
	class          string // the class the claim moves to
}

func newCrossNode(t *testing.T, sameClass bool) *crossNode {
	t.Helper()
	f := newFixture(t)
	nodes := acctest.RequireNodes(t, 2)
	c := &crossNode{fixture: f, class: f.target}
	if sameClass {
		c.class = f.source
	}
	for _, n := range nodes {
		if n.Name != f.node && len(n.DataDisks) > 0 {
			c.second = n
			break
		}
	}
	if c.second.Name == "" {
		t.Fatalf("no node but %s with a data disk in %s", f.node, acctest.NodesFile())
	}
	ctx := context.Background()
	n, err := f.client.CoreV1().Nodes().Get(ctx, c.second.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.secondHostname = n.Labels[volumes.HostnameLabel]
	c.srcPV = acctest.RandomName("migration-src")
	c.src = f.volume(t, c.srcPV, f.source)
	c.dstPV = acctest.RandomName("migration-dst")
	c.dst = filepath.Join(c.second.DataDisks[0], c.dstPV)
	c.second.MustRun(t, `mkdir -p "$1"`, c.dst)
	// Last in, first out: after the fixture's cleanup removed the volume object.
	t.Cleanup(func() {
		if _, err := c.second.Run(t, `rm -rf "$1"`, c.dst); err != nil {
			t.Errorf("removing %s on node %s: %v", c.dst, c.second.Name, err)
		}
	})
	_, err = f.client.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: c.dstPV},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: k8sresource.MustParse("64Mi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              c.class,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: c.dst}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: volumes.HostnameLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{c.secondHostname}}},
			}}}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f.claim(t, "data", c.src)
	f.writer(t, c.src)
	return c
}

// read reads a file of either volume: node 2's over its sshd, node 1's here.
func (c *crossNode) read(t *testing.T) acctest.ReadFunc {
	return func(path string) ([]byte, error) {
		if strings.HasPrefix(path, c.dst+"/") {
			return c.second.ReadFile(t, path)
		}
		return os.ReadFile(path)
	}
}

func (c *crossNode) config() string { return c.configRestore(false) }

func (c *crossNode) configRestore(restore bool) string {
	return acctest.ProviderConfig() + fmt.Sprintf(`
resource "clusterstorage_volume_migration" "test" {
  namespace          = %q
  claim              = "data"
  storage_class      = %q
  target_node        = %q
  image              = %q
  image_pull_policy  = "Never"
  restore_on_destroy = %t
}
`, c.ns, c.class, c.second.Name, acctest.RsyncImage, restore)
}

// checkRestored checks what the destroy of a migration with restore_on_destroy left: the claim
// back on the source volume on node 1, every record node 2's volume held at the stop at the
// start of the source's, no pod or Secret of the migration left.
func (c *crossNode) checkRestored(t *testing.T) error {
	ctx := context.Background()
	if _, err := c.checkClaim(ctx, c.srcPV, c.class); err != nil {
		return err
	}
	records, err := acctest.CheckRecordsMoved(c.read(t), c.dst, c.src)
	if err != nil {
		return err
	}
	t.Logf("records on node %s at the stop: %d, all back on the source", c.second.Name, records)
	pods, err := c.client.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=volume-migration"})
	if err != nil || len(pods.Items) > 0 {
		return fmt.Errorf("pods of the migration left: %v (%v)", podNames(pods), err)
	}
	secrets, err := c.client.CoreV1().Secrets(c.ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=volume-migration"})
	if err != nil || len(secrets.Items) > 0 {
		return fmt.Errorf("Secrets of the migration left: %v (%v)", secrets, err)
	}
	return nil
}

// check checks what the move left: the claim bound to the volume on node 2, every record the
// source held at the stop at the start of the new volume's records, the writer writing there
// (on node 2), the source volume kept and marked, no pod or Secret of the migration left.
func (c *crossNode) check(t *testing.T) error {
	ctx := context.Background()
	if _, err := c.checkClaim(ctx, c.dstPV, c.class); err != nil {
		return err
	}
	read := c.read(t)
	records, err := acctest.CheckRecordsMoved(read, c.src, c.dst)
	if err != nil {
		return err
	}
	t.Logf("records on the source at the scale-down: %d, all on node %s", records, c.second.Name)
	acctest.WaitRecords(t, c.client, c.ns, read, c.dst, records+10)
	pods, err := c.client.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, p := range pods.Items {
		if p.Labels["app.kubernetes.io/component"] == "volume-migration" {
			return fmt.Errorf("pod %s of the migration is left", p.Name)
		}
		if p.Labels["app"] == "writer" && !kubePodFinished(&p) && p.Spec.NodeName != c.second.Name {
			return fmt.Errorf("the writer's pod %s runs on %s, not on %s", p.Name, p.Spec.NodeName, c.second.Name)
		}
	}
	secrets, err := c.client.CoreV1().Secrets(c.ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=volume-migration"})
	if err != nil {
		return err
	}
	if len(secrets.Items) > 0 {
		return fmt.Errorf("the migration's Secret %s is left", secrets.Items[0].Name)
	}
	pv, err := c.client.CoreV1().PersistentVolumes().Get(ctx, c.srcPV, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("the source volume is gone: %w", err)
	}
	if pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain || !strings.HasPrefix(pv.Annotations[volumemigration.AnnotationMigratedTo], c.ns+"/data ") {
		return fmt.Errorf("source volume: policy %s, annotations %v", pv.Spec.PersistentVolumeReclaimPolicy, pv.Annotations)
	}
	return nil
}

func kubePodFinished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || p.DeletionTimestamp != nil
}

// TestAccVolumeMigration_crossNode moves a claim from a local volume on node 1 to one on node 2
// (target_node) while a writer writes records to it: the copy between nodes (an rsync daemon pod
// on node 2, the client on node 1). After the apply every record the source held at the stop is
// on node 2's volume, byte for byte, the writer writes there, the source is kept, and no pod or
// Secret of the migration is left. A target_node the cluster does not have is refused at plan.
func TestAccVolumeMigration_crossNode(t *testing.T) {
	acctest.RunsUnder(t, acctest.EveryCLI)
	c := newCrossNode(t, false)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:      strings.Replace(c.config(), c.second.Name, "no-such-node-"+c.ns, 1),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`Node no-such-node-\S+ not found`),
			},
			{
				Config: c.config(),
				Check: resource.ComposeTestCheckFunc(
					resource.TestCheckResourceAttr("clusterstorage_volume_migration.test", "volume", c.dstPV),
					resource.TestCheckResourceAttr("clusterstorage_volume_migration.test", "source_volume", c.srcPV),
					func(*terraform.State) error { return c.check(t) },
				),
			},
		},
	})
}

// TestAccVolumeMigration_crossNodeResumed: a claim moves to node 2 on its own class (target_node
// only). A run between nodes stops as a killed provider would in the first copy, its rsync daemon and client pods running and its Secret there. The next
// apply removes them, makes them again (the Secret of that name is reused) and finishes: every record on
// node 2, nothing of the migration left. Then restore_on_destroy is set and the destroy moves the
// claim back to node 1, between nodes again: every record back on the source volume.
func TestAccVolumeMigration_crossNodeResumed(t *testing.T) {
	c := newCrossNode(t, true)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{{
			PreConfig: func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				defer cancel()
				m := &volumemigration.Migrator{Client: c.client, Spec: volumemigration.Spec{
					Namespace: c.ns, Claim: "data", StorageClass: c.class, TargetNode: c.second.Name, Image: acctest.RsyncImage, PullPolicy: "Never",
				}, Log: func(msg string, fields map[string]any) { t.Logf("killed run: %s %v", msg, fields) }}
				if err := volumemigration.RunKilledInCrossCopy(ctx, m); err != volumemigration.ErrKilled {
					t.Fatalf("the killed run returned %v", err)
				}
				pods, err := c.client.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=volume-migration"})
				if err != nil || len(pods.Items) != 2 {
					t.Fatalf("after the killed run: %v pods of the migration (%v), want the daemon and the client", podNames(pods), err)
				}
				s, err := c.client.CoreV1().Secrets(c.ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=volume-migration"})
				if err != nil || len(s.Items) != 1 {
					t.Fatalf("after the killed run: Secrets %v (%v), want the migration's", s, err)
				}
			},
			Config: c.config(),
			Check: resource.ComposeTestCheckFunc(
				resource.TestCheckResourceAttr("clusterstorage_volume_migration.test", "volume", c.dstPV),
				func(*terraform.State) error { return c.check(t) },
			),
		}, {
			Config: c.configRestore(true),
		}},
		CheckDestroy: func(*terraform.State) error { return c.checkRestored(t) },
	})
}

func podNames(pods *corev1.PodList) []string {
	if pods == nil {
		return nil
	}
	var out []string
	for _, p := range pods.Items {
		out = append(out, p.Name+" on "+p.Spec.NodeName)
	}
	return out
}
