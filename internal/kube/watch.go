package kube

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
)

// Watched is the part of a typed client (client.CoreV1().Pods(namespace),
// client.CoreV1().PersistentVolumes(), ...) that WaitFor uses.
type Watched[T any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// Object is a pointer to a typed object (*corev1.Pod, *corev1.PersistentVolume); its nil is "gone".
type Object interface {
	comparable
	metav1.Object
}

// Wait says what WaitFor waits for.
type Wait struct {
	// What is awaited, for errors: "pod default/x to start".
	What    string
	Timeout time.Duration
	// Recheck, when set, also calls done this often with the last version seen, for conditions
	// that depend on more than the object (its events, the clock).
	Recheck time.Duration
}

// retryPause is how long WaitFor waits before reading again after a failed read or watch.
const retryPause = 250 * time.Millisecond

// WaitFor waits, with a watch rather than polling, until done holds for the object named name;
// done sees nil once the object is gone, and ends the wait early by returning an error. last is
// the version the caller already has (a create's response), or nil to read the object first.
//
// It returns the last version seen (nil when gone), also on a timeout, whose error says what was
// awaited and done's last reason. A read failing with a Transient error, and a watch the API
// server ends or breaks, are retried from a fresh read until the timeout; another read error ends
// the wait. An object gone that done does not accept ends it too.
func WaitFor[T Object](ctx context.Context, client Watched[T], name string, last T, w Wait, done func(obj T) (ok bool, reason string, err error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, w.Timeout)
	defer cancel()
	wt := &waiter[T]{client: client, name: name, wait: w, done: done}
	if w.Recheck > 0 {
		ticker := time.NewTicker(w.Recheck)
		defer ticker.Stop()
		wt.recheck = ticker.C
	}
	var zero T
	fresh := last == zero
	for {
		if fresh {
			obj, err := client.Get(ctx, name, metav1.GetOptions{})
			switch {
			case IsNotFound(err):
				last = zero // a typed client returns an empty object with its error
			case err != nil && ctx.Err() == nil && Transient(err):
				wt.reason = "reading it: " + err.Error()
				if !wt.pause(ctx) {
					return last, wt.timedOut(ctx)
				}
				continue
			case err != nil && ctx.Err() == nil:
				return last, fmt.Errorf("waiting for %s: %w", w.What, err)
			case err != nil:
				return last, wt.timedOut(ctx)
			default:
				last = obj
			}
		}
		fresh = true
		if stop, err := wt.check(last); stop {
			return last, err
		}
		var stop bool
		var err error
		if last, stop, err = wt.follow(ctx, last); stop {
			return last, err
		}
	}
}

type waiter[T Object] struct {
	client  Watched[T]
	name    string
	wait    Wait
	done    func(T) (bool, string, error)
	recheck <-chan time.Time
	reason  string // done's last reason, or the last failure worth reporting on a timeout
}

// check calls done with obj and reports whether the wait is over, and with which error.
func (wt *waiter[T]) check(obj T) (bool, error) {
	ok, reason, err := wt.done(obj)
	if reason != "" {
		wt.reason = reason
	}
	var zero T
	switch {
	case err != nil:
		return true, err
	case ok:
		return true, nil
	case obj == zero:
		return true, fmt.Errorf("waiting for %s: it is gone", wt.wait.What)
	}
	return false, nil
}

// follow watches the object from last's version until done ends the wait (stop) or the watch ends
// or breaks (not stop: the caller reads the object afresh and watches again).
func (wt *waiter[T]) follow(ctx context.Context, last T) (T, bool, error) {
	watcher, err := wt.client.Watch(ctx, metav1.ListOptions{
		FieldSelector:   fields.OneTermEqualSelector("metadata.name", wt.name).String(),
		ResourceVersion: last.GetResourceVersion(),
	})
	if err != nil {
		if ctx.Err() == nil {
			wt.reason = "watching it: " + err.Error()
			if wt.pause(ctx) {
				return last, false, nil
			}
		}
		return last, true, wt.timedOut(ctx)
	}
	defer watcher.Stop()
	for {
		select {
		case <-ctx.Done():
			return last, true, wt.timedOut(ctx)
		case <-wt.recheck:
			if stop, err := wt.check(last); stop {
				return last, true, err
			}
		case ev, open := <-watcher.ResultChan():
			if !open || ev.Type == watch.Error {
				return last, false, nil
			}
			obj, isT := ev.Object.(T)
			if !isT || obj.GetName() != wt.name {
				continue // a bookmark, or another object from a client that ignores the selector
			}
			if ev.Type == watch.Deleted {
				var zero T
				obj = zero
			}
			last = obj
			if stop, err := wt.check(last); stop {
				return last, true, err
			}
		}
	}
}

// pause waits retryPause, and reports false when ctx ended first.
func (wt *waiter[T]) pause(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(retryPause):
		return true
	}
}

func (wt *waiter[T]) timedOut(ctx context.Context) error {
	if ctx.Err() == context.Canceled {
		return fmt.Errorf("cancelled while waiting for %s", wt.wait.What)
	}
	msg := fmt.Sprintf("timed out after %s waiting for %s", wt.wait.Timeout, wt.wait.What)
	if wt.reason != "" {
		msg += ": " + wt.reason
	}
	return fmt.Errorf("%s", msg)
}

// Transient reports whether a failed API request is worth repeating: the server was unreachable,
// restarting or overloaded. Errors about credentials or the request itself are not.
func Transient(err error) bool {
	if err == nil {
		return false
	}
	return utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) ||
		apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err)
}
