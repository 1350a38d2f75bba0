package faults_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/volumes"
)

// The migration workload: a claim "data" on a static local volume of node 1 (this machine) that a
// writer writes records to, beside bulkFiles files of random bytes (so that the first copy lasts
// long enough to be hit), moved by clusterstorage_volume_migration to a free local volume on node
// 2 (target_node), its copy over the pod network or over the provider's SSH (transfer). The
// fault hits the first copy (the writer running); the row then checks that the claim stayed on
// the source with every record and file, and that the next apply, the fault lifted, moves it with
// every record and file. The fixture is made here and not with the volume migration's: the
// matrix holds the nodes alone, and that fixture holds them shared (it would wait on the matrix).

const (
	bulkFiles  = 4
	bulkMiB    = 64
	manyFiles  = 40000
	migrComp   = "app.kubernetes.io/component=volume-migration"
	sshDaemons = "/tmp/clusterstorage-rsyncd-"
)

func migrationString(transfer string) string {
	how := map[string]string{"pod_network": "over the pod network", "ssh": "over SSH"}[transfer]
	return "volume_migration of a claim with a writer, node 1 to node 2 " + how
}

// migration is one row's claim, volumes and classes.
type migration struct {
	e            env
	ns, from, to string // namespace, source and target classes
	srcPV, dstPV string
	src, dst     string // the volumes' directories: on node 1 (here), on node 2
	transfer     string
	files        dataFiles // the bulk files in src, by path
	client       kubeClient
	manySum      string // treeSum of src's small files
}

// treeSum is the SHA-256 of the names and contents of the small files in dir/many on node.
func (m *migration) treeSum(t *testing.T, node acctest.ClusterNode, dir string) string {
	const script = `cd "$1/many" 2>/dev/null && find . -type f | sort | xargs sha256sum | sha256sum | cut -d ' ' -f 1`
	if node.MachineDir == "" {
		out, err := exec.Command("sh", "-c", script, "sh", dir).Output()
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(out))
	}
	out, _ := node.Run(t, script, dir) //nolint:errcheck // "" when unreadable
	return strings.TrimSpace(out)
}

func newMigration(t *testing.T, e env, prefix, transfer string) *migration {
	t.Helper()
	ctx := context.Background()
	client := acctest.Kube(t)
	m := &migration{e: e, ns: prefix, from: prefix + "-from", to: prefix + "-to", srcPV: prefix + "-src", dstPV: prefix + "-dst",
		src: filepath.Join(t.TempDir(), "src"), transfer: transfer, client: client}
	m.dst = filepath.Join(e.second.DataDisks[0], prefix)
	t.Cleanup(func() { m.cleanup(t) })
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: m.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, class := range []string{m.from, m.to} {
		wffc, retain := storagev1.VolumeBindingWaitForFirstConsumer, corev1.PersistentVolumeReclaimRetain
		_, err := client.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{
			ObjectMeta:  metav1.ObjectMeta{Name: class},
			Provisioner: "kubernetes.io/no-provisioner", VolumeBindingMode: &wffc, ReclaimPolicy: &retain,
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(m.src, 0o755); err != nil {
		t.Fatal(err)
	}
	e.second.MustRun(t, `mkdir -p "$1"`, m.dst)
	for _, v := range []struct {
		name, class, dir string
		node             acctest.ClusterNode
	}{{m.srcPV, m.from, m.src, e.node}, {m.dstPV, m.to, m.dst, e.second}} {
		n, err := client.CoreV1().Nodes().Get(ctx, v.node.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = client.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: v.name},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: k8sresource.MustParse("1Gi")},
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
				StorageClassName:              v.class,
				PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: v.dir}},
				NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: volumes.HostnameLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{n.Labels[volumes.HostnameLabel]}}},
				}}}},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	var dirs []string
	for i := range bulkFiles {
		dirs = append(dirs, filepath.Join(m.src, fmt.Sprintf("bulk%d", i)))
	}
	m.files = disk{e.node}.writeData(t, dirs)
	for f := range m.files { // writeData's 256 KiB: grown to bulkMiB of random bytes
		out, err := exec.Command("sh", "-c", `head -c "$2" /dev/urandom >"$1"`, "sh", f, strconv.Itoa(bulkMiB<<20)).CombinedOutput()
		if err != nil {
			t.Fatalf("writing %s: %v\n%s", f, err, out)
		}
		m.files[f] = disk{e.node}.sum(t, f)
	}
	// Many small files: the first copy lasts long enough for the fault to hit it.
	many := filepath.Join(m.src, "many")
	if err := os.MkdirAll(many, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range manyFiles {
		if err := os.WriteFile(filepath.Join(many, strconv.Itoa(i)), []byte(strconv.Itoa(i)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m.manySum = m.treeSum(t, e.node, m.src)
	from := m.from
	_, err := client.CoreV1().PersistentVolumeClaims(m.ns).Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: m.ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: &from,
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: k8sresource.MustParse("512Mi")}},
			VolumeName:       m.srcPV,
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	acctest.StartWriter(t, client, m.ns, "data", os.ReadFile, m.src)
	return m
}

func (m *migration) config() string {
	provider := acctest.ProviderConfig()
	if m.transfer == "ssh" {
		provider = acctest.ProviderConfigNodes(m.e.node, m.e.second)
	}
	return provider + fmt.Sprintf(`
resource "clusterstorage_volume_migration" "m" {
  namespace           = %q
  claim               = "data"
  storage_class       = %q
  target_node         = %q
  cross_node_transfer = %q
  image               = %q
  image_pull_policy   = "Never"
}
`, m.ns, m.to, m.e.second.Name, m.transfer, acctest.RsyncImage)
}

// read reads a file of either volume: node 2's over its sshd, node 1's here.
func (m *migration) read(t *testing.T) acctest.ReadFunc {
	return func(path string) ([]byte, error) {
		if strings.HasPrefix(path, m.dst+"/") {
			return m.e.second.ReadFile(t, path)
		}
		return os.ReadFile(path)
	}
}

// copying is whether the first copy runs: over the pod network, the client pod on node 1 runs;
// over SSH, an rsync on node 1 (this machine) copies the source's directory (copy.sh's SOURCE
// in its environment).
func (m *migration) copying() bool {
	if m.transfer == "ssh" {
		procs, _ := filepath.Glob("/proc/[0-9]*") //nolint:errcheck // a fixed pattern
		for _, p := range procs {
			cmd, err := os.ReadFile(filepath.Join(p, "cmdline"))
			if err != nil || !strings.HasPrefix(filepath.Base(string(cmd[:max(0, strings.IndexByte(string(cmd), 0))])), "rsync") {
				continue
			}
			if env, err := os.ReadFile(filepath.Join(p, "environ")); err == nil && strings.Contains("\x00"+string(env), "\x00SOURCE="+m.src+"\x00") {
				return true
			}
		}
		return false
	}
	pods, err := m.client.CoreV1().Pods(m.ns).List(context.Background(), metav1.ListOptions{LabelSelector: migrComp})
	if err != nil {
		return false
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName == m.e.node.Name && p.Status.Phase == corev1.PodRunning {
			return true
		}
	}
	return false
}

// claimVolume is the volume the claim "data" is bound to.
func (m *migration) claimVolume(t *testing.T) string {
	var name string
	err := kube.Poll(context.Background(), 200*time.Millisecond, 2*time.Minute, "the claim", func(ctx context.Context) (bool, string, error) {
		pvc, err := m.client.CoreV1().PersistentVolumeClaims(m.ns).Get(ctx, "data", metav1.GetOptions{})
		if err != nil {
			return kube.KeepPolling(err)
		}
		name = pvc.Spec.VolumeName
		return true, "", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return name
}

// left is what of the migration is on the cluster and node 2: its pods and Secrets, and the
// directories of daemons of a copy over SSH.
func (m *migration) left(t *testing.T) []string {
	ctx := context.Background()
	var out []string
	err := kube.Poll(ctx, 200*time.Millisecond, 2*time.Minute, "the migration's objects", func(ctx context.Context) (bool, string, error) {
		out = nil
		pods, err := m.client.CoreV1().Pods(m.ns).List(ctx, metav1.ListOptions{LabelSelector: migrComp})
		if err != nil {
			return kube.KeepPolling(err)
		}
		for _, p := range pods.Items {
			out = append(out, "pod/"+p.Name)
		}
		secrets, err := m.client.CoreV1().Secrets(m.ns).List(ctx, metav1.ListOptions{LabelSelector: migrComp})
		if err != nil {
			return kube.KeepPolling(err)
		}
		for _, s := range secrets.Items {
			out = append(out, "secret/"+s.Name)
		}
		return true, "", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	dirs, _ := m.e.second.Run(t, `ls -d "$1"* 2>/dev/null || true`, sshDaemons) //nolint:errcheck // none
	for _, d := range strings.Fields(dirs) {
		out = append(out, "node2:"+d)
	}
	return out
}

func (m *migration) cleanup(t *testing.T) {
	ctx := context.Background()
	if err := m.client.CoreV1().Namespaces().Delete(ctx, m.ns, metav1.DeleteOptions{}); err != nil && !kube.IsNotFound(err) {
		t.Errorf("deleting namespace %s: %v", m.ns, err)
	}
	err := kube.Poll(ctx, 250*time.Millisecond, 3*time.Minute, "namespace "+m.ns+" to be deleted", func(ctx context.Context) (bool, string, error) {
		_, err := m.client.CoreV1().Namespaces().Get(ctx, m.ns, metav1.GetOptions{})
		return kube.IsNotFound(err), "it still exists", nil
	})
	if err != nil {
		t.Error(err)
	}
	for _, pv := range []string{m.srcPV, m.dstPV} {
		if err := m.client.CoreV1().PersistentVolumes().Delete(ctx, pv, metav1.DeleteOptions{}); err != nil && !kube.IsNotFound(err) {
			t.Errorf("deleting volume %s: %v", pv, err)
		}
	}
	for _, class := range []string{m.from, m.to} {
		if err := m.client.StorageV1().StorageClasses().Delete(ctx, class, metav1.DeleteOptions{}); err != nil && !kube.IsNotFound(err) {
			t.Errorf("deleting StorageClass %s: %v", class, err)
		}
	}
	// Neither pattern matches this command's own line (pkill -f would end it).
	if _, err := m.e.second.Run(t, `pkill -f -- "[/]tmp/clusterstorage-rsyncd-[0-9a-f]"; d=/tmp/clusterstorage-rsyncd; rm -rf -- "$1" "$d"-*`, m.dst); err != nil {
		t.Errorf("removing %s and the daemons' directories on node %s: %v", m.dst, m.e.second.Name, err)
	}
}

// freeTarget makes node 2's volume Available again after a rolled-back run deleted the new claim
// bound to it (a static volume with reclaim policy Retain is then Released), as its admin would
// (TestAccVolumeMigration_crossNodeSSHCut does the same): the partial copy stays in it.
func (m *migration) freeTarget(t *testing.T) {
	ctx := context.Background()
	err := kube.Poll(ctx, 200*time.Millisecond, time.Minute, "volume "+m.dstPV+" to be Available, Bound or Released", func(ctx context.Context) (bool, string, error) {
		pv, err := m.client.CoreV1().PersistentVolumes().Get(ctx, m.dstPV, metav1.GetOptions{})
		if err != nil {
			return kube.KeepPolling(err)
		}
		switch pv.Status.Phase {
		case corev1.VolumeAvailable, corev1.VolumeBound: // Bound: the next apply resumes from the record
			return true, "", nil
		case corev1.VolumeReleased:
			t.Logf("the rollback left volume %s Released (claimRef %s/%s): made Available again", m.dstPV, pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name)
			_, err := m.client.CoreV1().PersistentVolumes().Patch(ctx, m.dstPV, types.JSONPatchType, []byte(`[{"op":"remove","path":"/spec/claimRef"}]`), metav1.PatchOptions{})
			return false, "made Available", err
		}
		return false, string(pv.Status.Phase), nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// lostFiles counts the bulk files gone or changed in dir (on node, or here), and one more when
// any of the small files is.
func (m *migration) lostFiles(t *testing.T, node acctest.ClusterNode, dir string) int {
	n := 0
	d := disk{node}
	for f, want := range m.files {
		if d.sum(t, filepath.Join(dir, strings.TrimPrefix(f, m.src+"/"))) != want {
			n++
		}
	}
	if m.treeSum(t, node, dir) != m.manySum {
		n++
	}
	return n
}

// runMigration is run for the migration workload: the fault hits the first copy.
func (c faultCase) runMigration(t *testing.T, e env) {
	prefix := acctest.RandomName("fault")
	m := newMigration(t, e, prefix, c.workload.transfer)
	w := acctest.NewWorkspace(t, e.cli, e.rc, m.config())
	start := time.Now()
	r := w.Start(t, "apply", "-auto-approve")
	if !waitUntil(r, func() bool { return m.copying() }) {
		t.Fatalf("the apply ended before its first copy was seen: the fault came too late (%v)\n%s", r.Wait(t, time.Minute), r.Output())
	}
	if v := m.claimVolume(t); v != m.srcPV {
		t.Fatalf("the claim is on %s, not on the source, when the first copy runs", v)
	}
	t.Logf("the first copy runs %s after the apply started", time.Since(start).Round(time.Millisecond))
	c.inject(t, e, r)
	err := r.Wait(t, 10*time.Minute)
	t.Logf("the faulted apply ended %s after the apply started", time.Since(start).Round(time.Millisecond))
	if c.recover != nil {
		c.recover(t, e)
	}
	res := row{Fault: c.fault, During: c.during, Apply: "succeeded"}
	var why []string
	if err != nil {
		res.Apply = "failed: " + firstError(r.Output())
		m.freeTarget(t)
		t.Logf("the faulted apply, as the user sees it:\n%s", errorsPart(r.Output()))
		if strings.Contains(r.Output(), "This is a bug in the provider") {
			why = append(why, "the faulted run reported a bug in the provider")
		}
	}
	// The faulted run: the claim stays on the source with every record and file (or, had the run
	// succeeded, is on node 2 with them).
	onSource := m.claimVolume(t) == m.srcPV
	if err != nil && !onSource {
		why = append(why, "the failed run left the claim off the source volume")
	}
	if onSource {
		res.Lost += m.lostFiles(t, e.node, m.src)
		acctest.WaitRecords(t, m.client, m.ns, os.ReadFile, m.src, 21)
	}
	if left := m.left(t); len(left) > 0 {
		res.Untracked = len(left)
		t.Logf("the faulted run left: %s", strings.Join(left, ", "))
	}
	// The state, refreshed, records the migration only if the claim is on node 2.
	if out, err := w.Exec(t, "apply", "-refresh-only", "-auto-approve"); err != nil {
		why = append(why, "refreshing the state failed: "+firstError(out))
	}
	out, _ := w.Exec(t, "state", "list") //nolint:errcheck // no state: no resources
	if strings.Contains(out, "clusterstorage_volume_migration.m") && m.claimVolume(t) != m.dstPV {
		why = append(why, "the state records the migration done while the claim is not on node 2's volume")
	}
	// The next apply, the fault lifted, moves the claim with every record and file.
	next := time.Now()
	if out, err := w.Exec(t, "apply", "-auto-approve"); err != nil {
		why = append(why, "the next apply failed: "+firstError(out))
		t.Logf("the next apply:\n%s", errorsPart(out))
	} else {
		t.Logf("the next apply took %s", time.Since(next).Round(time.Millisecond))
		out, err := w.Exec(t, "plan", "-detailed-exitcode")
		if exit := (*exec.ExitError)(nil); errors.As(err, &exit) && exit.ExitCode() == 2 {
			why = append(why, "a plan after the next apply still shows changes")
			t.Logf("the plan:\n%s", errorsPart(out))
		} else if err != nil {
			why = append(why, "a plan after the next apply failed: "+firstError(out))
		}
		if v := m.claimVolume(t); v != m.dstPV {
			why = append(why, "after the next apply the claim is on "+v+", not on node 2's volume")
		} else {
			if records, err := acctest.CheckRecordsMoved(m.read(t), m.src, m.dst); err != nil {
				res.Lost++
				why = append(why, err.Error())
			} else {
				t.Logf("records on the source at the stop: %d, all on node %s", records, e.second.Name)
				acctest.WaitRecords(t, m.client, m.ns, m.read(t), m.dst, records+10)
			}
			res.Lost += m.lostFiles(t, e.second, m.dst)
		}
	}
	res.Lost += m.lostFiles(t, e.node, m.src) // the source is kept
	left := m.left(t)
	res.Leaked = len(left)
	if out, err := w.Exec(t, "destroy", "-auto-approve"); err != nil {
		why = append(why, "the destroy afterwards failed: "+firstError(out))
	}
	res.Survived = len(why) == 0
	res.Why = strings.Join(why, "; ")
	report(t, res)
	if !res.Survived || res.Leaked != 0 || res.Lost != 0 {
		t.Errorf("%s during %s: survived=%t leaked=%d lost=%d: %s (left: %v)", c.fault, c.during, res.Survived, res.Leaked, res.Lost, res.Why, left)
	}
}
