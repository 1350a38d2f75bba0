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

// PodFinished reports whether all of a pod's containers have terminated for good: its phase is
// Succeeded or Failed.
func PodFinished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}
