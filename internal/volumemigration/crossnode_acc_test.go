package volumemigration_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
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
	t              testing.TB
}

func newCrossNode(t *testing.T, sameClass bool) *crossNode {
	t.Helper()
	f := newFixture(t)
	nodes := acctest.RequireNodes(t, 2)
	c := &crossNode{fixture: f, class: f.target, t: t}
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
	return acctest.ProviderConfig() + acctest.LoadConfig(c.t, "cross_node.tf", c.ns, c.class, c.second.Name, acctest.RsyncImage, restore)
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
				m := c.killedRun(t)
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

// holdPorts runs a pod on node 2 with the node's network that listens on ports of node 2's
// address (rsync daemons without modules: any program would do, as the node's own services and
// other pods with the node's network do), and waits until each answers from here. It runs until
// the test's namespace goes.
func (c *crossNode) holdPorts(t *testing.T, ports []int32) {
	t.Helper()
	ctx := context.Background()
	args := []string{"sh", "-c", `: >/tmp/empty && for p; do rsync --daemon --address="$ADDRESS" --port="$p" --config=/tmp/empty || exit 1; done; exec sleep 3600`, "hold"}
	for _, p := range ports {
		args = append(args, strconv.Itoa(int(p)))
	}
	zero := int64(0)
	_, err := c.client.CoreV1().Pods(c.ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "port-holder", Namespace: c.ns},
		Spec: corev1.PodSpec{
			NodeName: c.second.Name, HostNetwork: true, RestartPolicy: corev1.RestartPolicyNever, TerminationGracePeriodSeconds: &zero,
			Containers: []corev1.Container{{
				Name: "hold", Image: acctest.RsyncImage, ImagePullPolicy: corev1.PullNever, Command: args,
				Env: []corev1.EnvVar{{Name: "ADDRESS", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}},
			}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.waitHeld(t, ports)
}

// waitHeld waits until something listens on each port of node 2's address.
func (c *crossNode) waitHeld(t *testing.T, ports []int32) {
	t.Helper()
	for _, p := range ports {
		addr := net.JoinHostPort(c.second.Address, strconv.Itoa(int(p)))
		err := kube.Poll(context.Background(), 250*time.Millisecond, time.Minute, addr+" to be held", func(context.Context) (bool, string, error) {
			conn, err := net.DialTimeout("tcp", addr, time.Second)
			if err != nil {
				return kube.KeepPolling(err)
			}
			return true, "", conn.Close()
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestAccVolumeMigration_crossNodePortTaken: node 2 has the ports the migration's rsync daemons
// would take first (the first two of the first copy's, the first of the final copy's), held on
// its address by another pod with the node's network, as the node's own services or another
// migration's daemon may hold them (the test cluster gives every pod the node's network). The
// daemons' binds fail, and each is made again on the next port of its sequence until it
// listens; only then does the client start. The move finishes, every record on node 2, and the
// ports are still held by the pod that had them. (Before, a daemon whose bind failed ran on
// IPv6 alone or ended, and the client found another program on the port or nothing: the copy
// failed and was rolled back.)
func TestAccVolumeMigration_crossNodePortTaken(t *testing.T) {
	c := newCrossNode(t, false)
	claim, err := c.client.CoreV1().PersistentVolumeClaims(c.ns).Get(context.Background(), "data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	held := append(volumemigration.DaemonPorts(claim, "copy", 2), volumemigration.DaemonPorts(claim, "final", 1)...)
	c.holdPorts(t, held)
	t.Logf("holding ports %v on node %s", held, c.second.Name)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{{
			Config: c.config(),
			Check: resource.ComposeTestCheckFunc(
				resource.TestCheckResourceAttr("clusterstorage_volume_migration.test", "volume", c.dstPV),
				func(*terraform.State) error { return c.check(t) },
				func(*terraform.State) error {
					p, err := c.client.CoreV1().Pods(c.ns).Get(context.Background(), "port-holder", metav1.GetOptions{})
					if err != nil || p.Status.Phase != corev1.PodRunning {
						return fmt.Errorf("the pod holding the ports: %v (%v)", p.Status.Phase, err)
					}
					c.waitHeld(t, held)
					return nil
				},
			),
		}},
	})
}

// crossNodeKill is a provider killed in a phase of a move between nodes, and what it left: the
// writer still running (else stopped), the claim there (else deleted in the swap), bound to the
// new volume (else to the source), the rsync daemon and client pods left, the Secret left (it
// is kept from the first copy to the end of the final one).
type crossNodeKill struct {
	name string
	kill func(context.Context, *volumemigration.Migrator) error
	killedAt
	pods, secret bool
	// ci: the row runs in `make test`; FAULTS_ALL=1 (make faults) runs every row.
	ci bool
}

// TestAccVolumeMigration_crossNodeKilled: a move from node 1 to node 2 with the writer running,
// the provider killed in each phase after the first copy (the first copy's is
// TestAccVolumeMigration_crossNodeResumed): after the first copy, after the stop, in the final
// copy between nodes (its daemon and client running, the Secret there: the delta and the
// verification), once the verified copy's swap is recorded, in the swap with the claim deleted,
// and before the start. Each time the next apply resumes from what is recorded and finishes on
// node 2: every record the source held at the stop there, the writer writing there, nothing of
// the migration left. `make test` runs the final copy's row (about 40 s each); `make faults`
// (FAULTS_ALL=1) runs every row.
func TestAccVolumeMigration_crossNodeKilled(t *testing.T) {
	all := os.Getenv("FAULTS_ALL") != ""
	for _, k := range []crossNodeKill{
		{name: "after the first copy", kill: volumemigration.RunKilledAfterCopy, killedAt: killedAt{running: true, claim: true}, secret: true},
		{name: "after the stop", kill: volumemigration.RunKilledAfterScaleDown, killedAt: killedAt{claim: true}, secret: true},
		{name: "in the final copy", kill: volumemigration.RunKilledInCrossFinal, killedAt: killedAt{claim: true}, pods: true, secret: true, ci: true},
		{name: "at the swap", kill: volumemigration.RunKilledAtSwap, killedAt: killedAt{claim: true}},
		{name: "in the swap", kill: volumemigration.RunKilledAfterClaimDeleted, killedAt: killedAt{}},
		{name: "before the start", kill: volumemigration.RunKilledBeforeStart, killedAt: killedAt{claim: true, onTarget: true}},
	} {
		if !k.ci && !all {
			continue
		}
		t.Run(k.name, func(t *testing.T) { testCrossNodeKilled(t, k) })
	}
}

func testCrossNodeKilled(t *testing.T, k crossNodeKill) {
	c := newCrossNode(t, false)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{{
			PreConfig: func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				defer cancel()
				m := c.killedRun(t)
				if err := k.kill(ctx, m); err != volumemigration.ErrKilled {
					t.Fatalf("the killed run returned %v", err)
				}
				c.checkKilled(ctx, t, k)
			},
			Config: c.config(),
			Check: resource.ComposeTestCheckFunc(
				resource.TestCheckResourceAttr("clusterstorage_volume_migration.test", "source_volume", c.srcPV),
				resource.TestCheckResourceAttr("clusterstorage_volume_migration.test", "volume", c.dstPV),
				func(*terraform.State) error { return c.check(t) },
			),
		}},
	})
}

// killedRun is a Migrator of the move crossNode's configuration makes (pod network), logging
// as the run a test kills.
func (c *crossNode) killedRun(t *testing.T) *volumemigration.Migrator {
	return &volumemigration.Migrator{Client: c.client, Spec: volumemigration.Spec{
		Namespace: c.ns, Claim: "data", StorageClass: c.class, TargetNode: c.second.Name, Image: acctest.RsyncImage, PullPolicy: "Never",
	}, Log: func(msg string, fields map[string]any) { t.Logf("killed run: %s %v", msg, fields) }}
}

// checkKilled checks that the killed run left what k says.
func (c *crossNode) checkKilled(ctx context.Context, t *testing.T, k crossNodeKill) {
	t.Helper()
	d, err := c.client.AppsV1().Deployments(c.ns).Get(ctx, "writer", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if replicas := *d.Spec.Replicas; (replicas == 1) != k.running {
		t.Fatalf("after the killed run the writer has %d replicas; want it running: %t", replicas, k.running)
	}
	claim, err := c.client.CoreV1().PersistentVolumeClaims(c.ns).Get(ctx, "data", metav1.GetOptions{})
	switch {
	case k.claim && err != nil:
		t.Fatal(err)
	case k.claim:
		t.Logf("recorded on the claim (volume %s): %s", claim.Spec.VolumeName, claim.Annotations[volumemigration.AnnotationProgress])
		if onTarget := claim.Spec.VolumeName == c.dstPV; onTarget != k.onTarget {
			t.Fatalf("after the killed run the claim is on volume %s; want it on the new volume: %t", claim.Spec.VolumeName, k.onTarget)
		}
	case !kube.IsNotFound(err):
		t.Fatalf("after the killed run the claim is there (%v), want it deleted", err)
	}
	selector := metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=volume-migration"}
	pods, err := c.client.CoreV1().Pods(c.ns).List(ctx, selector)
	if err != nil {
		t.Fatal(err)
	}
	secrets, err := c.client.CoreV1().Secrets(c.ns).List(ctx, selector)
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	if k.pods {
		want = 2 // the daemon and the client
	}
	if len(pods.Items) != want || (len(secrets.Items) == 1) != k.secret || len(secrets.Items) > 1 {
		t.Fatalf("after the killed run: pods %v and %d Secrets of the migration; want %d pods, the Secret: %t", podNames(pods), len(secrets.Items), want, k.secret)
	}
}

// TestAccVolumeMigration_crossNodeScaledBack: as TestAccVolumeMigration_scaledBack, on a move
// between nodes: the Deployment carries Argo CD's tracking annotation and the test plays its
// self-heal (it scales the writer back to one whenever it asks for fewer), and the user set
// controllers_paused. The first copy to node 2 runs; the stop is undone by the self-heal, which
// the apply notices while it waits for the pods to stop: it fails naming the Deployment and its
// manager and rolls back. The claim is on its source volume on node 1 with every record the
// writer wrote, the writer runs there again, and no pod, Secret or claim of the migration is
// left.
func TestAccVolumeMigration_crossNodeScaledBack(t *testing.T) {
	c := newCrossNode(t, false)
	ctx := context.Background()
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{"argocd.argoproj.io/tracking-id":"shop:apps/Deployment:%s/writer"}}}`, c.ns)
	if _, err := c.client.AppsV1().Deployments(c.ns).Patch(ctx, "writer", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	selfHeal(t, c.fixture, "writer")
	before, err := os.ReadFile(filepath.Join(c.src, "records"))
	if err != nil {
		t.Fatal(err)
	}
	paused := strings.Replace(c.config(), `image_pull_policy  = "Never"`, "image_pull_policy  = \"Never\"\n  controllers_paused = true", 1)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{{
			Config:      paused,
			ExpectError: acctest.ErrorRegexp(`something else acted on the workload.*Deployment writer asks for 1 replicas again \(set by argocd-controller\).*Rolled back.*Checked afterwards: claim \S+ \(the same claim\) is bound to its volume`),
		}},
	})
	c.checkRolledBack(t, c.src)
	after, err := os.ReadFile(filepath.Join(c.src, "records"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(after, before) {
		t.Errorf("the source's records (%d bytes) do not begin with the %d bytes it held before the migration", len(after), len(before))
	}
	selector := metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=volume-migration"}
	pods, err := c.client.CoreV1().Pods(c.ns).List(ctx, selector)
	if err != nil || len(pods.Items) > 0 {
		t.Errorf("pods of the migration left: %v (%v)", podNames(pods), err)
	}
	secrets, err := c.client.CoreV1().Secrets(c.ns).List(ctx, selector)
	if err != nil || len(secrets.Items) > 0 {
		t.Errorf("Secrets of the migration left: %d (%v)", len(secrets.Items), err)
	}
	all, err := c.client.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=writer"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range all.Items {
		if !kubePodFinished(&p) && p.Spec.NodeName != c.node {
			t.Errorf("the writer's pod %s runs on %s, not on the source's node %s", p.Name, p.Spec.NodeName, c.node)
		}
	}
}

// localPathClasses makes two classes of rancher local-path (provisioner rancher.io/local-path;
// the provisioner itself is not needed: the plan reads its configuration) and its ConfigMap in
// local-path-storage, holding acctest.LockLocalPath so that no test deploys the provisioner
// meanwhile: the first class has dir on node 2, the second no directory there. Both go when the
// test ends.
func (c *crossNode) localPathClasses(t *testing.T, dir string) (withDir, without string) {
	t.Helper()
	ctx := context.Background()
	acctest.LockCluster(t, c.client, acctest.LockLocalPath)
	for _, ns := range []string{"kube-system", "local-path-storage"} {
		if _, err := c.client.CoreV1().ConfigMaps(ns).Get(ctx, "local-path-config", metav1.GetOptions{}); err == nil {
			needed(t, "the cluster has rancher local-path's configuration in "+ns+": the test makes one of its own")
		}
	}
	_, err := c.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "local-path-storage"}}, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err): // someone's, without the ConfigMap: only the ConfigMap is the test's
		t.Cleanup(func() {
			err := c.client.CoreV1().ConfigMaps("local-path-storage").Delete(context.Background(), "local-path-config", metav1.DeleteOptions{})
			if err != nil && !kube.IsNotFound(err) {
				t.Error(err)
			}
		})
	case err != nil:
		t.Fatal(err)
	default:
		t.Cleanup(func() {
			if err := c.client.CoreV1().Namespaces().Delete(context.Background(), "local-path-storage", metav1.DeleteOptions{}); err != nil {
				t.Error(err)
			}
			err := kube.Poll(context.Background(), 250*time.Millisecond, time.Minute, "namespace local-path-storage to be deleted", func(ctx context.Context) (bool, string, error) {
				_, err := c.client.CoreV1().Namespaces().Get(ctx, "local-path-storage", metav1.GetOptions{})
				return kube.IsNotFound(err), "it still exists", nil
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	withDir, without = acctest.RandomName("migration-lp"), acctest.RandomName("migration-lp")
	config := fmt.Sprintf(`{"storageClassConfigs":{%q:{"nodePathMap":[{"node":%q,"paths":[%q]}]},%q:{"nodePathMap":[{"node":%q,"paths":[]},{"node":"DEFAULT_PATH_FOR_NON_LISTED_NODES","paths":["/opt/local-path-provisioner"]}]}}}`,
		withDir, c.second.Name, dir, without, c.second.Name)
	_, err = c.client.CoreV1().ConfigMaps("local-path-storage").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "local-path-config", Namespace: "local-path-storage"}, Data: map[string]string{"config.json": config},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	for _, name := range []string{withDir, without} {
		_, err := c.client.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: "rancher.io/local-path", VolumeBindingMode: &wffc,
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := c.client.StorageV1().StorageClasses().Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !kube.IsNotFound(err) {
				t.Errorf("removing StorageClass %s: %v", name, err)
			}
		})
	}
	return withDir, without
}

// TestAccVolumeMigration_crossNodeRoom: the plan's room checks of a move to node 2, with the
// provider's ssh block reaching the nodes (every one of them at plan, without an apply):
//   - a rancher local-path class whose configuration gives node 2 no directory is refused,
//     naming its ConfigMap;
//   - one that gives node 2 its data disk, for a new volume of 1Pi, is refused with the free
//     space df measured there and what the source's files take (du over SSH on node 1);
//   - the same class for the source's own size passes;
//   - the source's files (a 1 MiB file beside the records) do not fit in a new volume of 512Ki
//     on a class of static volumes, which holds a volume to its size: refused, asking for a
//     size of at least what they take.
func TestAccVolumeMigration_crossNodeRoom(t *testing.T) {
	c := newCrossNode(t, false)
	disk := c.second.DataDisks[0]
	withDir, without := c.localPathClasses(t, disk)
	if err := os.WriteFile(filepath.Join(c.src, "ballast"), make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	ssh := acctest.ProviderConfigNodes(acctest.RequireNodes(t, 2)...)
	config := func(class, size string) string {
		cfg := strings.Replace(c.config(), acctest.ProviderConfig(), ssh, 1)
		cfg = strings.Replace(cfg, fmt.Sprintf("storage_class      = %q", c.class), fmt.Sprintf("storage_class      = %q", class), 1)
		if size != "" {
			cfg = strings.Replace(cfg, `image_pull_policy  = "Never"`, "image_pull_policy  = \"Never\"\n  size               = \""+size+"\"", 1)
		}
		return cfg
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:   config(without, ""),
				PlanOnly: true,
				ExpectError: acctest.ErrorRegexp(`StorageClass ` + without + ` cannot make the new volume on node ` + c.second.Name + `.*It is a rancher local-path class, and its configuration ` +
					`\(ConfigMap local-path-storage/local-path-config\) says where its volumes go on each node: its nodePathMap gives node ` + c.second.Name + ` no path`),
			},
			{
				Config:   config(withDir, "1Pi"),
				PlanOnly: true,
				ExpectError: acctest.ErrorRegexp(`StorageClass ` + withDir + ` has no room for the claim.*It is a rancher local-path class: its volumes are directories under ` +
					regexp.QuoteMeta(disk) + ` \(ConfigMap local-path-storage/local-path-config\) on node ` + c.second.Name + `, where the new volume is to be, and its filesystem has \S+ available ` +
					`\(df, measured over SSH\): less than the 1Pi the new volume needs \(its size: .*the source's files take \S+ now`),
			},
			{
				Config:             config(withDir, ""),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				Config:   config(c.class, "512Ki"),
				PlanOnly: true,
				ExpectError: acctest.ErrorRegexp(`The claim's data does not fit in the new volume.*The source's files take \d+(Ki|Mi) \(du -skx of ` + regexp.QuoteMeta(c.src) + ` on node ` + c.node +
					`, over SSH\), more than the 512Ki the new volume asks for .*Set size to at least`),
			},
		},
	})
}
