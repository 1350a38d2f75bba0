package benchmark

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

func TestExpired(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		meta metav1.ObjectMeta
		want bool
	}{
		{"expiry passed", metav1.ObjectMeta{Annotations: map[string]string{AnnotationExpires: "2026-12-01T09:59:59Z"}}, true},
		{"expiry to come", metav1.ObjectMeta{Annotations: map[string]string{AnnotationExpires: "2026-12-01T10:00:01Z"}}, false},
		{"unreadable expiry is kept", metav1.ObjectMeta{Annotations: map[string]string{AnnotationExpires: "soon"}}, false},
		{"no annotation, old", metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(now.Add(-25 * time.Hour))}, true},
		{"no annotation, young", metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))}, false},
	} {
		if got := expired(c.meta, now); got != c.want {
			t.Errorf("%s: expired = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestExpiresAt(t *testing.T) {
	ctx, cancel := context.WithDeadline(context.Background(), time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	defer cancel()
	if got, want := expiresAt(ctx), "2026-12-01T10:02:00Z"; got != want {
		t.Errorf("expiresAt = %s, want %s (the deadline plus cleanupTimeout)", got, want)
	}
}

func TestOrphaned(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	later := "2026-12-01T11:00:00Z" // expiry an hour ahead: only the heartbeat can tell
	for _, c := range []struct {
		name string
		ann  map[string]string
		want bool
	}{
		{"heartbeat renewed", map[string]string{AnnotationExpires: later, AnnotationHeartbeat: kube.HeartbeatValue(now.Add(-kube.HeartbeatInterval))}, false},
		{"heartbeat just within", map[string]string{AnnotationExpires: later, AnnotationHeartbeat: kube.HeartbeatValue(now.Add(-kube.HeartbeatStale))}, false},
		{"heartbeat stopped", map[string]string{AnnotationExpires: later, AnnotationHeartbeat: kube.HeartbeatValue(now.Add(-kube.HeartbeatStale - time.Millisecond))}, true},
		{"unreadable heartbeat waits for the expiry", map[string]string{AnnotationExpires: later, AnnotationHeartbeat: "now"}, false},
		{"renewed heartbeat, expiry passed", map[string]string{AnnotationExpires: "2026-12-01T09:00:00Z", AnnotationHeartbeat: kube.HeartbeatValue(now)}, true},
		{"no heartbeat (an earlier version's run)", map[string]string{AnnotationExpires: later}, false},
	} {
		if got := orphaned(metav1.ObjectMeta{Annotations: c.ann}, now); got != c.want {
			t.Errorf("%s: orphaned = %v, want %v", c.name, got, c.want)
		}
	}
}
