package kube

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestHeartbeatStopped(t *testing.T) {
	const a = "example.io/heartbeat"
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name  string
		value *string
		want  bool
	}{
		{"none", nil, false},
		{"unreadable", ptr("yesterday"), false},
		{"renewed", ptr(HeartbeatValue(now.Add(-HeartbeatInterval))), false},
		{"just within", ptr(HeartbeatValue(now.Add(-HeartbeatStale))), false},
		{"stopped", ptr(HeartbeatValue(now.Add(-HeartbeatStale - time.Millisecond))), true},
		{"in the future (another machine's clock)", ptr(HeartbeatValue(now.Add(time.Minute))), false},
	} {
		meta := metav1.ObjectMeta{}
		if c.value != nil {
			meta.Annotations = map[string]string{a: *c.value}
		}
		if got := HeartbeatStopped(meta, a, now); got != c.want {
			t.Errorf("%s: HeartbeatStopped = %v, want %v", c.name, got, c.want)
		}
	}
}

func ptr(s string) *string { return &s }

// TestHeartbeat renews with a patch that sets the annotation, reports failures and keeps going,
// and stops (and stays stopped) when told.
func TestHeartbeat(t *testing.T) {
	const a = "example.io/heartbeat"
	var mu sync.Mutex
	var patches [][]byte
	var failures int
	renew := func(_ context.Context, patch []byte) error {
		mu.Lock()
		defer mu.Unlock()
		patches = append(patches, patch)
		if len(patches) == 2 {
			return errors.New("connection refused")
		}
		return nil
	}
	failed := func(error) { mu.Lock(); failures++; mu.Unlock() }
	stop := heartbeat(context.Background(), 5*time.Millisecond, a, renew, failed)
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(patches)
		mu.Unlock()
		if n >= 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d renewals in 10 s, want 4", n)
		}
		time.Sleep(time.Millisecond)
	}
	stop()
	mu.Lock()
	n, f := len(patches), failures
	first := patches[0]
	mu.Unlock()
	if f != 1 {
		t.Errorf("%d failures reported, want 1 (the second renewal's)", f)
	}
	var body struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(first, &body); err != nil {
		t.Fatalf("patch %s: %v", first, err)
	}
	if _, err := time.Parse(time.RFC3339Nano, body.Metadata.Annotations[a]); err != nil {
		t.Errorf("patch %s: annotation %s is not a time: %v", first, a, err)
	}
	time.Sleep(20 * time.Millisecond) // nothing may run after stop returned
	mu.Lock()
	defer mu.Unlock()
	if len(patches) != n {
		t.Errorf("%d renewals after stop returned", len(patches)-n)
	}
}
