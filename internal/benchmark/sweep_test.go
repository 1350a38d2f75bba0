package benchmark

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
