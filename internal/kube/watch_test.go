package kube

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func volume(name, rv string, phase corev1.PersistentVolumePhase) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv},
		Status:     corev1.PersistentVolumeStatus{Phase: phase},
	}
}

// watched is a fake clientset whose PersistentVolume watches are driven by the test: each
// Watch call takes the next FakeWatcher from the channel the test feeds, and counts.
func watched(t *testing.T, objects ...runtime.Object) (*fake.Clientset, chan *watch.FakeWatcher, *atomic.Int32) {
	t.Helper()
	client := fake.NewClientset(objects...)
	watchers := make(chan *watch.FakeWatcher, 4)
	var watches atomic.Int32
	client.PrependWatchReactor("persistentvolumes", func(k8stesting.Action) (bool, watch.Interface, error) {
		watches.Add(1)
		w := watch.NewFakeWithChanSize(8, false)
		watchers <- w
		return true, w, nil
	})
	return client, watchers, &watches
}

func available(pv *corev1.PersistentVolume) (bool, string, error) {
	if pv == nil {
		return false, "", errors.New("gone")
	}
	return pv.Status.Phase == corev1.VolumeAvailable, "phase " + string(pv.Status.Phase), nil
}

func TestWaitForDoneAtOnceMakesNoWatch(t *testing.T) {
	client, _, watches := watched(t, volume("a", "1", corev1.VolumeAvailable))
	got, err := WaitFor(context.Background(), client.CoreV1().PersistentVolumes(), "a", nil, Wait{What: "a", Timeout: time.Second}, available)
	if err != nil || got == nil || got.Name != "a" {
		t.Fatalf("WaitFor = %v, %v; want volume a", got, err)
	}
	if n := watches.Load(); n != 0 {
		t.Errorf("%d watches made; want 0 (the read was enough)", n)
	}
}

func TestWaitForFollowsTheWatch(t *testing.T) {
	client, watchers, _ := watched(t)
	done := make(chan error, 1)
	var got *corev1.PersistentVolume
	go func() {
		var err error
		// last is the caller's version: no read, straight to the watch.
		got, err = WaitFor(context.Background(), client.CoreV1().PersistentVolumes(), "a", volume("a", "1", corev1.VolumePending), Wait{What: "a", Timeout: 5 * time.Second}, available)
		done <- err
	}()
	w := <-watchers
	w.Modify(volume("other", "2", corev1.VolumeAvailable)) // another object: not ours
	w.Modify(volume("a", "3", corev1.VolumePending))
	w.Modify(volume("a", "4", corev1.VolumeAvailable))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != "4" {
		t.Errorf("returned version %s; want 4", got.ResourceVersion)
	}
}

func TestWaitForResumesABrokenWatchFromAFreshRead(t *testing.T) {
	client, watchers, watches := watched(t, volume("a", "1", corev1.VolumePending))
	done := make(chan error, 1)
	go func() {
		_, err := WaitFor(context.Background(), client.CoreV1().PersistentVolumes(), "a", nil, Wait{What: "a", Timeout: 5 * time.Second}, available)
		done <- err
	}()
	w := <-watchers
	// The volume changes while no watch is open; the fresh read after the broken watch sees it.
	if err := client.Tracker().Update(schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumes"}, volume("a", "2", corev1.VolumeAvailable), ""); err != nil {
		t.Fatal(err)
	}
	w.Stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := watches.Load(); n != 1 {
		t.Errorf("%d watches; want 1", n)
	}
}

func TestWaitForGone(t *testing.T) {
	client, watchers, _ := watched(t)
	done := make(chan error, 1)
	go func() {
		_, err := WaitFor(context.Background(), client.CoreV1().PersistentVolumes(), "a", volume("a", "1", corev1.VolumePending), Wait{What: "a to be deleted", Timeout: 5 * time.Second},
			func(pv *corev1.PersistentVolume) (bool, string, error) { return pv == nil, "it still exists", nil })
		done <- err
	}()
	(<-watchers).Delete(volume("a", "2", corev1.VolumePending))
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// An object gone that done does not accept ends the wait with an error.
	go func() {
		_, err := WaitFor(context.Background(), client.CoreV1().PersistentVolumes(), "a", volume("a", "1", corev1.VolumePending), Wait{What: "a to be Available", Timeout: 5 * time.Second},
			func(pv *corev1.PersistentVolume) (bool, string, error) {
				return pv != nil && pv.Status.Phase == corev1.VolumeAvailable, "", nil
			})
		done <- err
	}()
	(<-watchers).Delete(volume("a", "2", corev1.VolumePending))
	if err := <-done; err == nil || !strings.Contains(err.Error(), "waiting for a to be Available: it is gone") {
		t.Fatalf("err = %v; want it to say the volume is gone", err)
	}
}

func TestWaitForTimeoutSaysWhyNot(t *testing.T) {
	client, _, _ := watched(t, volume("a", "1", corev1.VolumePending))
	_, err := WaitFor(context.Background(), client.CoreV1().PersistentVolumes(), "a", nil, Wait{What: "volume a", Timeout: 100 * time.Millisecond}, available)
	if err == nil || err.Error() != "timed out after 100ms waiting for volume a: phase Pending" {
		t.Fatalf("err = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = WaitFor(ctx, client.CoreV1().PersistentVolumes(), "a", volume("a", "1", corev1.VolumePending), Wait{What: "volume a", Timeout: time.Minute}, available)
	if err == nil || err.Error() != "cancelled while waiting for volume a" {
		t.Fatalf("err = %v", err)
	}
}

func TestWaitForReadErrors(t *testing.T) {
	// A transient failure is read again; another one ends the wait with it.
	for _, tc := range []struct {
		name    string
		fail    error
		wantErr string
	}{
		{"transient", apierrors.NewServiceUnavailable("restarting"), ""},
		{"forbidden", apierrors.NewForbidden(schema.GroupResource{Resource: "persistentvolumes"}, "a", errors.New("no")), "waiting for volume a: persistentvolumes \"a\" is forbidden: no"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, _, _ := watched(t, volume("a", "1", corev1.VolumeAvailable))
			var reads atomic.Int32
			client.PrependReactor("get", "persistentvolumes", func(k8stesting.Action) (bool, runtime.Object, error) {
				if reads.Add(1) == 1 {
					return true, nil, tc.fail
				}
				return false, nil, nil
			})
			_, err := WaitFor(context.Background(), client.CoreV1().PersistentVolumes(), "a", nil, Wait{What: "volume a", Timeout: 5 * time.Second}, available)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr) {
				t.Fatalf("err = %v; want %q", err, tc.wantErr)
			}
		})
	}
}

func TestWaitForRecheckAndDoneErrors(t *testing.T) {
	client, _, _ := watched(t)
	var calls atomic.Int32
	_, err := WaitFor(context.Background(), client.CoreV1().PersistentVolumes(), "a", volume("a", "1", corev1.VolumePending), Wait{What: "a", Timeout: 5 * time.Second, Recheck: 20 * time.Millisecond},
		func(*corev1.PersistentVolume) (bool, string, error) {
			if calls.Add(1) == 3 {
				return false, "", errors.New("it can never start")
			}
			return false, "", nil
		})
	// No event ever comes: the rechecks called done, and its error ended the wait.
	if err == nil || err.Error() != "it can never start" {
		t.Fatalf("err = %v", err)
	}
}
