package importmark

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestOrphan(t *testing.T) {
	old := PendingDead
	PendingDead = 300 * time.Millisecond
	t.Cleanup(func() { PendingDead = old })
	cases := []struct {
		name string
		// marks are the mark's age at each read, -1 for no mark (the last repeats).
		marks  []time.Duration
		orphan bool
		waited bool
	}{
		{name: "no mark: someone's object", marks: []time.Duration{-1}},
		{name: "an old mark: a dead create's", marks: []time.Duration{time.Second}, orphan: true},
		{name: "a young mark its create removes: a live create's", marks: []time.Duration{0, -1}, waited: true},
		{name: "a young mark that stays: a create that died just now", marks: []time.Duration{0}, orphan: true, waited: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			created := time.Now()
			n := 0
			get := func(context.Context) (*metav1.ObjectMeta, error) {
				obj := &metav1.ObjectMeta{Name: "v", Annotations: map[string]string{"other": "x"}}
				if age := tc.marks[min(n, len(tc.marks)-1)]; age >= 0 {
					obj.Annotations[PendingAnnotation] = created.Add(-age).UTC().Format(time.RFC3339Nano)
				}
				n++
				return obj, nil
			}
			start := time.Now()
			_, dead, err := Orphan(context.Background(), get)
			if err != nil {
				t.Fatal(err)
			}
			if dead != tc.orphan {
				t.Errorf("orphan = %t, want %t", dead, tc.orphan)
			}
			if waited := time.Since(start) >= 250*time.Millisecond; waited != tc.waited {
				t.Errorf("waited %s, want a wait: %t", time.Since(start), tc.waited)
			}
		})
	}
}

func TestMarkPending(t *testing.T) {
	obj := &metav1.ObjectMeta{Annotations: map[string]string{"keep": "1"}}
	MarkPending(obj)
	at, err := time.Parse(time.RFC3339Nano, obj.Annotations[PendingAnnotation])
	if err != nil || time.Since(at) > time.Minute || obj.Annotations["keep"] != "1" {
		t.Errorf("annotations after MarkPending: %v (%v)", obj.Annotations, err)
	}
}

// patches counts the merge patches that remove the mark.
type patches struct{ n atomic.Int32 }

func (p *patches) Patch(_ context.Context, _ string, pt types.PatchType, data []byte, _ metav1.PatchOptions, _ ...string) (*metav1.ObjectMeta, error) {
	if pt == types.MergePatchType && string(data) == string(clearPendingPatch) {
		p.n.Add(1)
	}
	return &metav1.ObjectMeta{}, nil
}

// A mark stays clearDelay after its create returned, and goes at once when the provider stops.
func TestClearLater(t *testing.T) {
	old := clearDelay
	clearDelay = 300 * time.Millisecond
	t.Cleanup(func() { clearDelay = old })
	var p patches
	ClearLater(context.Background(), &p, "StorageClass", "a")
	time.Sleep(100 * time.Millisecond)
	if n := p.n.Load(); n != 0 {
		t.Fatalf("the mark went %d times before the delay", n)
	}
	time.Sleep(400 * time.Millisecond)
	if n := p.n.Load(); n != 1 {
		t.Fatalf("the mark went %d times after the delay, want 1", n)
	}
	clearDelay = time.Hour
	ClearLater(context.Background(), &p, "StorageClass", "b")
	start := time.Now()
	Flush(5 * time.Second)
	if n := p.n.Load(); n != 2 || time.Since(start) > time.Second {
		t.Errorf("Flush: %d marks removed in %s, want 2 at once", n, time.Since(start))
	}
}
