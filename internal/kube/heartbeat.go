package kube

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A heartbeat is an annotation holding a wall-clock time (RFC 3339 with nanoseconds) that the
// provider renews every HeartbeatInterval on the objects of an operation in progress (a
// benchmark's pod and claim, a migration's copy pod). Once it is older than HeartbeatStale the
// provider that made the objects is gone (killed, its machine lost), and the next run removes
// them at once instead of waiting for their operation's timeout. The times are those of the
// providers' machines: HeartbeatStale allows for their clocks to differ by a few seconds.
const (
	HeartbeatInterval = 3 * time.Second
	HeartbeatStale    = 15 * time.Second
)

// HeartbeatValue is a heartbeat annotation's value for now.
func HeartbeatValue(now time.Time) string { return now.UTC().Format(time.RFC3339Nano) }

// HeartbeatStopped reports whether the heartbeat in annotation of meta is older than
// HeartbeatStale at now. An absent or unreadable heartbeat is not taken for a stopped one.
func HeartbeatStopped(meta metav1.ObjectMeta, annotation string, now time.Time) bool {
	t, err := time.Parse(time.RFC3339Nano, meta.Annotations[annotation])
	return err == nil && now.Sub(t) > HeartbeatStale
}

// HeartbeatPatch is the merge patch that sets annotation to the heartbeat of now.
func HeartbeatPatch(annotation string, now time.Time) []byte {
	return fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, annotation, HeartbeatValue(now))
}

// Heartbeat calls renew with the merge patch of a fresh heartbeat in annotation every
// HeartbeatInterval until the returned function is called, which waits for it to stop. A renewal
// that fails (the API server restarting) goes to failed, unless ctx is done, and is tried again
// at the next tick.
func Heartbeat(ctx context.Context, annotation string, renew func(ctx context.Context, patch []byte) error, failed func(error)) (stop func()) {
	return heartbeat(ctx, HeartbeatInterval, annotation, renew, failed)
}

func heartbeat(ctx context.Context, interval time.Duration, annotation string, renew func(ctx context.Context, patch []byte) error, failed func(error)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-tick.C:
				if err := renew(ctx, HeartbeatPatch(annotation, now)); err != nil && ctx.Err() == nil {
					failed(err)
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}
