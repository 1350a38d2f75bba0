package volumemigration

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
}

func TestStale(t *testing.T) {
	now := time.Date(2026, 12, 3, 20, 0, 0, 0, time.UTC)
	meta := func(v string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Annotations: map[string]string{AnnotationHeartbeat: v}}
	}
	if !stale(meta(heartbeatValue(now.Add(-time.Minute))), now) {
		t.Error("a heartbeat a minute old is not stale")
	}
	if stale(meta(heartbeatValue(now.Add(-time.Second))), now) {
		t.Error("a heartbeat a second old is stale")
	}
	if stale(meta("garbage"), now) || stale(metav1.ObjectMeta{}, now) {
		t.Error("an unreadable or missing heartbeat counts as stale")
	}
}
