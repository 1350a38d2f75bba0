package kube

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// IsNotFound reports whether err says the object does not exist.
func IsNotFound(err error) bool {
	return apierrors.IsNotFound(err)
}

// Poll calls condition every interval until it returns true or an error, or until ctx ends or
// timeout passes. The error on timeout says what was awaited and the last reason given.
func Poll(ctx context.Context, interval, timeout time.Duration, what string, condition func(context.Context) (done bool, reason string, err error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	var reason string
	for {
		done, r, err := condition(ctx)
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		if r != "" {
			reason = r
		}
		select {
		case <-ctx.Done():
			msg := fmt.Sprintf("timed out after %s waiting for %s", timeout, what)
			if reason != "" {
				msg += ": " + reason
			}
			if ctx.Err() == context.Canceled {
				msg = fmt.Sprintf("cancelled while waiting for %s", what)
			}
			return fmt.Errorf("%s", msg)
		case <-ticker.C:
		}
	}
}

// KeepPolling is what a Poll condition returns for an error worth waiting out (the API server
// restarting, a conflict): not done, with the error as the reason a timeout reports.
func KeepPolling(err error) (bool, string, error) {
	return false, err.Error(), nil
}

// EventsFor returns the events recorded for one object, oldest first, as readable lines
// ("Warning FailedScheduling: 0/1 nodes are available ..."). Errors reading events are returned
// as a line of their own, since events only ever decorate another error.
func EventsFor(ctx context.Context, client kubernetes.Interface, namespace, kind, name string) []string {
	selector := fields.Set{"involvedObject.kind": kind, "involvedObject.name": name}.AsSelector().String()
	list, err := client.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: selector})
	if err != nil {
		return []string{fmt.Sprintf("(events could not be read: %v)", err)}
	}
	events := list.Items
	sort.SliceStable(events, func(i, j int) bool { return eventTime(events[i]).Before(eventTime(events[j])) })
	lines := make([]string, 0, len(events))
	for _, e := range events {
		lines = append(lines, fmt.Sprintf("%s %s: %s", e.Type, e.Reason, strings.TrimSpace(e.Message)))
	}
	return lines
}

func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	default:
		return e.CreationTimestamp.Time
	}
}

// NodeNames lists the cluster's nodes, for errors that name what exists.
func NodeNames(ctx context.Context, client kubernetes.Interface) ([]string, error) {
	list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	names := make([]string, 0, len(list.Items))
	for _, n := range list.Items {
		names = append(names, n.Name)
	}
	sort.Strings(names)
	return names, nil
}

// GetNode fetches a Node. A name the cluster does not have is an error that lists the nodes it has.
func GetNode(ctx context.Context, client kubernetes.Interface, name string) (*corev1.Node, error) {
	n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if IsNotFound(err) {
		names, listErr := NodeNames(ctx, client)
		if listErr != nil {
			return nil, fmt.Errorf("node %q not found (listing nodes failed too: %v)", name, listErr)
		}
		return nil, fmt.Errorf("node %q not found in the cluster; its nodes are: %s", name, strings.Join(names, ", "))
	}
	if err != nil {
		return nil, fmt.Errorf("reading node %q: %w", name, err)
	}
	return n, nil
}

// WatchPersistentVolume waits, with a watch rather than polling, until done holds for the
// PersistentVolume named name; done sees nil once the volume is gone. last is the version the
// caller already has (a create's response), or nil to read the volume first. It returns the
// last version seen (nil when gone), also on a timeout, whose error says what was awaited and
// done's last reason. A watch the API server ends or breaks is resumed from a fresh read.
func WatchPersistentVolume(ctx context.Context, client kubernetes.Interface, name string, last *corev1.PersistentVolume,
	timeout time.Duration, what string, done func(pv *corev1.PersistentVolume) (bool, string)) (*corev1.PersistentVolume, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	pvs := client.CoreV1().PersistentVolumes()
	var reason string
	ended := func() (*corev1.PersistentVolume, error) {
		msg := fmt.Sprintf("timed out after %s waiting for %s", timeout, what)
		if reason != "" {
			msg += ": " + reason
		}
		if ctx.Err() == context.Canceled {
			msg = fmt.Sprintf("cancelled while waiting for %s", what)
		}
		return last, fmt.Errorf("%s", msg)
	}
	fresh := last == nil
	for {
		if fresh {
			pv, err := pvs.Get(ctx, name, metav1.GetOptions{})
			switch {
			case IsNotFound(err):
				last = nil
			case err != nil:
				reason = err.Error()
				select { // the API server restarting: try again shortly
				case <-ctx.Done():
					return ended()
				case <-time.After(250 * time.Millisecond):
				}
				continue
			default:
				last = pv
			}
		}
		fresh = true
		ok, r := done(last)
		if ok {
			return last, nil
		}
		if r != "" {
			reason = r
		}
		if last == nil {
			return nil, fmt.Errorf("PersistentVolume %s is gone while waiting for %s", name, what)
		}
		w, err := pvs.Watch(ctx, metav1.ListOptions{
			FieldSelector:   fields.OneTermEqualSelector("metadata.name", name).String(),
			ResourceVersion: last.ResourceVersion,
		})
		if err != nil {
			if ctx.Err() != nil {
				return ended()
			}
			reason = err.Error()
			continue
		}
		for watching := true; watching; {
			select {
			case <-ctx.Done():
				w.Stop()
				return ended()
			case ev, open := <-w.ResultChan():
				if !open || ev.Type == watch.Error {
					watching = false // resume from a fresh read
					break
				}
				pv, isPV := ev.Object.(*corev1.PersistentVolume)
				if !isPV {
					continue
				}
				last = pv
				if ev.Type == watch.Deleted {
					last = nil
				}
				ok, r := done(last)
				if ok {
					w.Stop()
					return last, nil
				}
				if r != "" {
					reason = r
				}
				if last == nil {
					w.Stop()
					return nil, fmt.Errorf("PersistentVolume %s is gone while waiting for %s", name, what)
				}
			}
		}
		w.Stop()
	}
}
