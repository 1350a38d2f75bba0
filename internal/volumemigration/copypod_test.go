package volumemigration

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

func TestCopyPod(t *testing.T) {
	m := &Migrator{Spec: Spec{Namespace: "app", Claim: "data", Image: "img", PullPolicy: "Never", HostNetwork: true}}
	p := m.copyPod("data-migrating-1-final", modeFinal, "MK", "data-migrating-1", "node-2", 600)
	if p.Spec.RestartPolicy != corev1.RestartPolicyNever || *p.Spec.ActiveDeadlineSeconds != 600 || !p.Spec.HostNetwork || *p.Spec.AutomountServiceAccountToken {
		t.Errorf("pod spec: %+v", p.Spec)
	}
	c := p.Spec.Containers[0]
	if got := strings.Join(c.Command[3:], " "); got != "copy.sh final MK" {
		t.Errorf("script arguments: %q", got)
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, vm := range c.VolumeMounts {
		mounts[vm.Name] = vm
	}
	if !mounts["source"].ReadOnly || mounts["source"].MountPath != sourceMount || mounts["target"].ReadOnly || mounts["target"].MountPath != targetMount {
		t.Errorf("mounts: %+v", c.VolumeMounts)
	}
	claims := map[string]*corev1.PersistentVolumeClaimVolumeSource{}
	for _, v := range p.Spec.Volumes {
		claims[v.Name] = v.PersistentVolumeClaim
	}
	if claims["source"].ClaimName != "data" || !claims["source"].ReadOnly || claims["target"].ClaimName != "data-migrating-1" {
		t.Errorf("volumes: %+v", p.Spec.Volumes)
	}
	sc := c.SecurityContext
	if *sc.AllowPrivilegeEscalation || *sc.Privileged || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
		t.Errorf("security context: %+v", sc)
	}
	for _, added := range sc.Capabilities.Add {
		switch added {
		case "CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "MKNOD":
		default:
			t.Errorf("capability %s added", added)
		}
	}
	term := p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0]
	if len(term.MatchFields) != 1 || term.MatchFields[0].Values[0] != "node-2" {
		t.Errorf("node affinity: %+v", term)
	}
	if p.Labels[labelComponent] != component || p.Annotations[AnnotationHeartbeat] == "" {
		t.Errorf("labels %v, annotations %v", p.Labels, p.Annotations)
	}
	if p := m.copyPod("x", modeCopy, "MK", "t", "", 1); p.Spec.Affinity != nil {
		t.Errorf("a pod without a node is pinned: %+v", p.Spec.Affinity)
	}
	if cmd := c.Command; cmd[len(cmd)-1] != "MK" {
		t.Errorf("without copy_xattrs the script gets %q", cmd[4:])
	}
	m.Spec.CopyXattrs = true
	if cmd := m.copyPod("x", modeFinal, "MK", "t", "", 1).Spec.Containers[0].Command; cmd[len(cmd)-1] != "xattrs" {
		t.Errorf("with copy_xattrs the script gets %q", cmd[4:])
	}
}

func TestStale(t *testing.T) {
	now := time.Date(2026, 12, 3, 20, 0, 0, 0, time.UTC)
	meta := func(v string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Annotations: map[string]string{AnnotationHeartbeat: v}}
	}
	if !stale(meta(kube.HeartbeatValue(now.Add(-time.Minute))), now) {
		t.Error("a heartbeat a minute old is not stale")
	}
	if stale(meta(kube.HeartbeatValue(now.Add(-time.Second))), now) {
		t.Error("a heartbeat a second old is stale")
	}
	if stale(meta("garbage"), now) || stale(metav1.ObjectMeta{}, now) {
		t.Error("an unreadable or missing heartbeat counts as stale")
	}
}

// TestFollowLog: the copy pod's log is read as the API server streams it; the reading ends at
// the script's exit line although the stream stays open (the kubelet has not noticed the end
// yet), and a stream that ends before that line is reported as cut, with what it held.
func TestFollowLog(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("follow") != "true" {
			http.Error(w, "not followed", http.StatusBadRequest)
			return
		}
		switch r.URL.Path {
		case "/api/v1/namespaces/app/pods/ends/log":
			_, _ = fmt.Fprint(w, "MK stats\nNumber of regular files transferred: 2\nMK exit 0\n")
			http.NewResponseController(w).Flush() //nolint:errcheck // the client's read fails the test instead
			<-release                             // open until the test ends
		case "/api/v1/namespaces/app/pods/cut/log":
			_, _ = fmt.Fprint(w, "MK stats\nNumber of regular files transferred: 2\n")
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	defer close(release) // before srv.Close, which waits for the handler
	client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	m := &Migrator{Client: client, Spec: Spec{Namespace: "app", Claim: "data"}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	log, whole := m.followLog(ctx, "ends", "MK")
	if !whole || !strings.HasSuffix(log, "MK exit 0\n") || ctx.Err() != nil {
		t.Errorf("ends: whole %t, log %q, context %v", whole, log, ctx.Err())
	}
	log, whole = m.followLog(ctx, "cut", "MK")
	if whole || !strings.Contains(log, "files transferred: 2") {
		t.Errorf("cut: whole %t, log %q", whole, log)
	}
	if _, whole = m.followLog(ctx, "gone", "MK"); whole {
		t.Error("a pod without a log was read whole")
	}
}

// TestWaitPod_unschedulable: a copy pod the scheduler cannot place (no node can mount both
// volumes) fails the wait once it has been unschedulable for unschedulableFor, with the
// scheduler's message; one waiting for its image fails at once with the kubelet's reason.
func TestWaitPod_unschedulable(t *testing.T) {
	defer func(d time.Duration) { unschedulableFor = d }(unschedulableFor)
	unschedulableFor = 200 * time.Millisecond
	const msg = "0/3 nodes are available: 1 node(s) had volume node affinity conflict, 2 node(s) didn't match Pod's node affinity/selector."
	for _, tc := range []struct {
		name   string
		status corev1.PodStatus
		want   string
	}{
		{name: "unschedulable", want: "copy pod app/copy cannot be scheduled: " + msg + " Without target_node the new volume must be on a node that can mount the source too; set target_node",
			status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
				Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: msg}}}},
		{name: "image", want: "the copy container cannot start: ErrImageNeverPull: Container image \"rsync:3\" is not present with pull policy of Never",
			status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "copy", State: corev1.ContainerState{
				Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImageNeverPull", Message: `Container image "rsync:3" is not present with pull policy of Never`}}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "copy", Namespace: "app"}, Status: tc.status}
			m := &Migrator{Client: fake.NewClientset(pod), Spec: Spec{Namespace: "app"}}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			start := time.Now()
			_, err := m.waitPod(ctx, "copy", nil, "start", started)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error saying %q", err, tc.want)
			}
			if took := time.Since(start); tc.name == "unschedulable" && took < unschedulableFor {
				t.Errorf("gave up after %s, before the pod was unschedulable for %s", took, unschedulableFor)
			}
		})
	}
}
