package volumemigration

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/capacity"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/volumes"
)

func boundClaim(class string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "app"},
		Spec:       corev1.PersistentVolumeClaimSpec{StorageClassName: &class, VolumeName: "pv-1"},
		Status:     corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
	}
}

func input(mut func(*planInput)) planInput {
	in := planInput{
		Namespace: "app", ClaimName: "data", StorageClass: "openebs-hostpath",
		Claim:     boundClaim("longhorn"),
		Class:     &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "openebs-hostpath"}},
		Classes:   []string{"longhorn", "openebs-hostpath"},
		Workloads: []volumes.Workload{{Kind: volumes.KindDeployment, Name: "web", Replicas: 2}},
	}
	if mut != nil {
		mut(&in)
	}
	return in
}

func TestCheckPlan(t *testing.T) {
	block := corev1.PersistentVolumeBlock
	for name, c := range map[string]struct {
		in   planInput
		want []string // one substring per problem, in order; none: no problem
	}{
		"ok":            {in: input(nil)},
		"no workload":   {in: input(func(in *planInput) { in.Workloads = nil })},
		"statefulset":   {in: input(func(in *planInput) { in.Workloads = []volumes.Workload{{Kind: volumes.KindStatefulSet, Name: "db"}} })},
		"cronjob":       {in: input(func(in *planInput) { in.Workloads = []volumes.Workload{{Kind: volumes.KindCronJob, Name: "backup"}} })},
		"missing claim": {in: input(func(in *planInput) { in.Claim = nil }), want: []string{"Claim app/data not found"}},
		"pending":       {in: input(func(in *planInput) { in.Claim.Status.Phase = corev1.ClaimPending }), want: []string{"is not Bound"}},
		"block":         {in: input(func(in *planInput) { in.Claim.Spec.VolumeMode = &block }), want: []string{"block volume"}},
		"missing class": {in: input(func(in *planInput) { in.Class = nil }), want: []string{"StorageClass openebs-hostpath not found: The cluster has no StorageClass \"openebs-hostpath\" to move the claim to; its classes are: longhorn, openebs-hostpath"}},
		"same class":    {in: input(func(in *planInput) { in.Claim = boundClaim("openebs-hostpath") }), want: []string{"already on StorageClass openebs-hostpath"}},
		"bare pod":      {in: input(func(in *planInput) { in.Workloads = []volumes.Workload{{Kind: volumes.KindPod, Name: "debug"}} }), want: []string{"Pod debug mounts it and has no owner"}},
		"daemonset":     {in: input(func(in *planInput) { in.Workloads = []volumes.Workload{{Kind: volumes.KindDaemonSet, Name: "agent"}} }), want: []string{"DaemonSet agent mounts it"}},
		"operator":      {in: input(func(in *planInput) { in.Workloads = []volumes.Workload{{Kind: "PostgresCluster", Name: "pg"}} }), want: []string{"PostgresCluster/pg mounts it through a controller"}},
		"two workloads": {in: input(func(in *planInput) {
			in.Workloads = append(in.Workloads, volumes.Workload{Kind: volumes.KindJob, Name: "backup"})
		}), want: []string{"Deployment/web, Job/backup all mount it"}},
		"resuming": {in: input(func(in *planInput) {
			in.Claim = nil
			in.Progress = progress{Phase: phaseSwapping, StorageClass: "openebs-hostpath"}
		})},
		"resuming, no class": {in: input(func(in *planInput) {
			in.Class = nil
			in.Progress = progress{Phase: phaseStopped, StorageClass: "openebs-hostpath"}
		}), want: []string{"not found"}},
		"resuming elsewhere": {in: input(func(in *planInput) { in.Progress = progress{Phase: phaseStopped, StorageClass: "longhorn-2"} }), want: []string{`set storage_class = "longhorn-2"`}},
		"done": {in: input(func(in *planInput) {
			in.Claim = boundClaim("openebs-hostpath")
			in.Progress = progress{Phase: phaseDone, StorageClass: "openebs-hostpath"}
		})},
	} {
		t.Run(name, func(t *testing.T) {
			got := checkPlan(c.in)
			if len(got) != len(c.want) {
				t.Fatalf("problems: %v, want %d", got, len(c.want))
			}
			for i, p := range got {
				if !strings.Contains(p.Error(), c.want[i]) {
					t.Errorf("problem %d: %q, want it to contain %q", i, p.Error(), c.want[i])
				}
			}
		})
	}
}

func TestClaimTemplate(t *testing.T) {
	source := boundClaim("longhorn")
	source.Labels = map[string]string{"app": "web"}
	source.Annotations = map[string]string{
		"team": "a", "pv.kubernetes.io/bind-completed": "yes", "pv.kubernetes.io/bound-by-controller": "yes",
		"volume.kubernetes.io/storage-provisioner": "driver.longhorn.io", "volume.kubernetes.io/selected-node": "n1", AnnotationProgress: "{}",
	}
	source.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	target := boundClaim("openebs-hostpath")
	raw, err := claimTemplate(source, target)
	if err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{"bind-completed", "bound-by-controller", "storage-provisioner", "selected-node", AnnotationProgress} {
		if strings.Contains(raw, gone) {
			t.Errorf("template keeps %s: %s", gone, raw)
		}
	}
	for _, kept := range []string{`"team":"a"`, `"app":"web"`, `"storageClassName":"openebs-hostpath"`, `"ReadWriteOnce"`} {
		if !strings.Contains(raw, kept) {
			t.Errorf("template lacks %s: %s", kept, raw)
		}
	}
}

func TestTargetClaimName(t *testing.T) {
	c := boundClaim("x")
	c.UID = "1234"
	c.Name = strings.Repeat("a", 60)
	name := targetClaimName(c)
	if len(name) > 63 || !strings.HasPrefix(name, strings.Repeat("a", 40)+"-migrating-") {
		t.Errorf("name %q", name)
	}
	if targetClaimName(c) != name {
		t.Error("not deterministic")
	}
}

func TestCheckRoom(t *testing.T) {
	const mi = int64(1 << 20)
	static := func(largest int64, byNode map[string]capacity.VolumeStats) *capacity.ClassCapacity {
		return &capacity.ClassCapacity{Name: "local", Provisioner: capacity.NoProvisioner,
			Available: &capacity.VolumeStats{Count: 1, TotalBytes: largest, LargestBytes: largest}, AvailableByNode: byNode}
	}
	maxSize := 10 * mi
	for name, c := range map[string]struct {
		room       *capacity.ClassCapacity
		sourceNode string
		hostPath   *hostPathRoom
		want       string
	}{
		"unknown":           {room: nil},
		"dynamic, silent":   {room: &capacity.ClassCapacity{Name: "openebs-hostpath", Provisioner: "openebs.io/local"}},
		"static, fits":      {room: static(64*mi, nil)},
		"static, too small": {room: static(32*mi, nil), want: "no Available volume of at least 64Mi: 1 Available, the largest 32Mi"},
		"static, on node":   {room: static(64*mi, map[string]capacity.VolumeStats{"n1": {Count: 1, LargestBytes: 64 * mi}}), sourceNode: "n1"},
		"static, elsewhere": {room: static(64*mi, map[string]capacity.VolumeStats{"n2": {Count: 1, LargestBytes: 64 * mi}}), sourceNode: "n1", want: "on node n1, where the source volume is"},
		"csi, fits":         {room: &capacity.ClassCapacity{Name: "c", CSI: &capacity.CSICapacity{CapacityBytes: 100 * mi}}},
		"csi, full":         {room: &capacity.ClassCapacity{Name: "c", CSI: &capacity.CSICapacity{CapacityBytes: 10 * mi}}, want: "publishes 10Mi free in all"},
		"csi, max size":     {room: &capacity.ClassCapacity{Name: "c", CSI: &capacity.CSICapacity{CapacityBytes: 100 * mi, MaximumVolumeSizeBytes: &maxSize}}, want: "largest volume of 10Mi"},
		"hostpath, fits": {room: &capacity.ClassCapacity{Name: "openebs-hostpath", Provisioner: "openebs.io/local"},
			hostPath: &hostPathRoom{Node: "n1", BasePath: "/var/openebs/local", AvailableBytes: 64 * mi}},
		"hostpath, full": {room: &capacity.ClassCapacity{Name: "openebs-hostpath", Provisioner: "openebs.io/local"},
			hostPath: &hostPathRoom{Node: "n1", BasePath: "/var/openebs/local", AvailableBytes: 63 * mi},
			want:     "directories under /var/openebs/local on the node the copy runs on, n1, whose filesystem has 63Mi available"},
	} {
		t.Run(name, func(t *testing.T) {
			p := checkRoom(planInput{Room: c.room, Needed: 64 * mi, SourceNode: c.sourceNode, HostPath: c.hostPath})
			switch {
			case c.want == "" && p != nil:
				t.Errorf("refused: %v", p)
			case c.want != "" && (p == nil || !strings.Contains(p.Error(), c.want)):
				t.Errorf("got %v, want a problem containing %q", p, c.want)
			}
		})
	}
}
