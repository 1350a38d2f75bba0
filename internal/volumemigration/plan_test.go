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
		used       *sourceUsage
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
			hostPath: openebsRoom(64 * mi)},
		"hostpath, full": {room: &capacity.ClassCapacity{Name: "openebs-hostpath", Provisioner: "openebs.io/local"},
			hostPath: openebsRoom(63 * mi),
			want:     "It is an OpenEBS hostpath class: its volumes are directories under /var/openebs/local on node n1, where the new volume is to be, and its filesystem has 63Mi available (df, measured over SSH): less than the 64Mi the new volume needs"},
		"hostpath, size fits, files too": {room: &capacity.ClassCapacity{Name: "openebs-hostpath", Provisioner: "openebs.io/local"},
			hostPath: openebsRoom(64 * mi), used: &sourceUsage{Bytes: 10 * mi, How: "du", Node: "n0", Path: "/src"}},
		"hostpath, files fit, size does not": {room: &capacity.ClassCapacity{Name: "openebs-hostpath", Provisioner: "openebs.io/local"},
			hostPath: openebsRoom(10 * mi), used: &sourceUsage{Bytes: 10 * mi, How: "du", Node: "n0", Path: "/src"},
			want: "less than the 64Mi the new volume needs (its size: nothing holds a volume of this class to it, and it may grow to it; the source's files take 10Mi now, so a smaller size, set with size, will do)"},
		"hostpath, files more than the size": {room: &capacity.ClassCapacity{Name: "openebs-hostpath", Provisioner: "openebs.io/local"},
			hostPath: openebsRoom(65 * mi), used: &sourceUsage{Bytes: 66 * mi, How: "du", Node: "n0", Path: "/src"},
			want: "less than the 66Mi the source's files take (du -skx of /src on node n0, over SSH), more than the new volume's size, 64Mi"},
		"hostpath with quota, size": {room: &capacity.ClassCapacity{Name: "openebs-hostpath", Provisioner: "openebs.io/local"},
			hostPath: quota(openebsRoom(10 * mi)), used: &sourceUsage{Bytes: mi, How: "df", Node: "n0", Path: "/src"},
			want: "less than the 64Mi the new volume needs"},
		"local-path, one path has room": {room: &capacity.ClassCapacity{Name: "local-path", Provisioner: "rancher.io/local-path"},
			hostPath: localPathRoom(mi, 64*mi)},
		"local-path, none has room": {room: &capacity.ClassCapacity{Name: "local-path", Provisioner: "rancher.io/local-path"},
			hostPath: localPathRoom(mi, 2*mi),
			want:     "directories under one of /a, /b (the provisioner picks one at random) (ConfigMap kube-system/local-path-config) on node n1, where the new volume is to be, and /a has 1Mi, /b has 2Mi available"},
		"local-path, no path on the node": {room: &capacity.ClassCapacity{Name: "local-path", Provisioner: "rancher.io/local-path"},
			hostPath: &hostPathRoom{Kind: "a rancher local-path class", Node: "n1", Config: "kube-system/local-path-config", NoPath: "its nodePathMap gives node n1 no path"},
			want:     "StorageClass local-path cannot make the new volume on node n1: It is a rancher local-path class, and its configuration (ConfigMap kube-system/local-path-config) says where its volumes go on each node: its nodePathMap gives node n1 no path"},
	} {
		t.Run(name, func(t *testing.T) {
			p := checkRoom(planInput{Room: c.room, Needed: 64 * mi, SourceNode: c.sourceNode, HostPath: c.hostPath, Used: c.used})
			switch {
			case c.want == "" && p != nil:
				t.Errorf("refused: %v", p)
			case c.want != "" && (p == nil || !strings.Contains(p.Error(), c.want)):
				t.Errorf("got %v, want a problem containing %q", p, c.want)
			}
		})
	}
}

// openebsRoom is an OpenEBS hostpath class's room on n1 with available bytes free.
func openebsRoom(available int64) *hostPathRoom {
	return &hostPathRoom{Kind: "an OpenEBS hostpath class", Node: "n1", Paths: []pathRoom{{Path: "/var/openebs/local", AvailableBytes: available}}}
}

func quota(h *hostPathRoom) *hostPathRoom {
	h.Quota = true
	return h
}

// localPathRoom is a local-path class's room on n1, with two paths /a and /b.
func localPathRoom(a, b int64) *hostPathRoom {
	return &hostPathRoom{Kind: "a rancher local-path class", Node: "n1", Config: "kube-system/local-path-config",
		Paths: []pathRoom{{Path: "/a", AvailableBytes: a}, {Path: "/b", AvailableBytes: b}}}
}

// TestCheckUsed: the source's files, when measured, must fit in the new volume's size on a class
// that holds a volume to it; not on a class of directories without a quota (its room is
// checkRoom's), nor when they are not known.
func TestCheckUsed(t *testing.T) {
	const mi = int64(1 << 20)
	used := &sourceUsage{Bytes: 65 * mi, How: "df", Node: "n1", Path: "/mnt/disks/a"}
	for name, c := range map[string]struct {
		in   planInput
		want string
	}{
		"unknown":      {in: planInput{Needed: 64 * mi}},
		"fits":         {in: planInput{Needed: 65 * mi, Used: used}},
		"does not fit": {in: planInput{Needed: 64 * mi, Used: used, StorageClass: "fast"}, want: "size: The claim's data does not fit in the new volume: The source's files take 65Mi (df of its own filesystem of /mnt/disks/a on node n1, over SSH), more than the 64Mi the new volume asks for (size, else the source claim's capacity): StorageClass fast holds a volume to its size"},
		"unlimited":    {in: planInput{Needed: 64 * mi, Used: used, Unlimited: true}},
	} {
		p := checkUsed(c.in)
		switch {
		case c.want == "" && p != nil:
			t.Errorf("%s: refused: %v", name, p)
		case c.want != "" && (p == nil || !strings.Contains(p.Attribute+": "+p.Error(), c.want)):
			t.Errorf("%s: got %v, want a problem containing %q", name, p, c.want)
		}
	}
	// In the plan's checks, with the rest of them.
	in := input(func(in *planInput) { in.Needed, in.Used = 64*mi, used })
	if err := Check(in); err == nil || !strings.Contains(err.Error(), "Set size to at least 65Mi") {
		t.Errorf("Check: %v", err)
	}
}

// TestHostPathWarning: a class with several directories on the node (local-path picks one at
// random) that the plan lets through warns when one of them lacks the room.
func TestHostPathWarning(t *testing.T) {
	const mi = int64(1 << 20)
	used := &sourceUsage{Bytes: 8 * mi, How: "du", Node: "n0", Path: "/src"}
	for name, c := range map[string]struct {
		h    *hostPathRoom
		used *sourceUsage
		want string
	}{
		"one directory":                {h: openebsRoom(64 * mi)},
		"refused":                      {h: localPathRoom(mi, 2*mi), used: used},
		"both have room":               {h: localPathRoom(64*mi, 65*mi), used: used},
		"one of two directories short": {h: localPathRoom(mi, 64*mi), used: used, want: "It is a rancher local-path class, whose provisioner picks one of its directories on node n1 at random: /a has 1Mi available, less than the 64Mi the new volume needs"},
	} {
		in := input(func(in *planInput) { in.Needed, in.HostPath, in.Used = 64*mi, c.h, c.used })
		var got []string
		for _, p := range planWarnings(in) {
			got = append(got, p.Error())
		}
		all := strings.Join(got, "\n")
		switch {
		case c.want == "" && all != "":
			t.Errorf("%s: warned: %s", name, all)
		case c.want != "" && !strings.Contains(all, c.want):
			t.Errorf("%s: warnings %q, want one containing %q", name, all, c.want)
		}
	}
}
