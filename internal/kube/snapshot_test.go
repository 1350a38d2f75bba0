package kube

import (
	"context"
	"errors"
	"sync"
	"testing"

	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// cluster is what the snapshot's list and get functions read in these tests: a set of classes
// that the test changes behind the snapshot's back, counting the requests made.
type cluster struct {
	mu      sync.Mutex
	classes map[string]storagev1.StorageClass
	listErr error
	lists   int
	gets    int
}

func newCluster(names ...string) *cluster {
	c := &cluster{classes: map[string]storagev1.StorageClass{}}
	for _, n := range names {
		c.put(n, "1")
	}
	return c
}

func (c *cluster) put(name, version string) storagev1.StorageClass {
	c.mu.Lock()
	defer c.mu.Unlock()
	sc := storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: version}}
	c.classes[name] = sc
	return sc
}

func (c *cluster) remove(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.classes, name)
}

func (c *cluster) snapshot() *Snapshot[storagev1.StorageClass] {
	return NewSnapshot(storagev1.Resource("storageclasses"),
		func(context.Context) ([]storagev1.StorageClass, error) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.lists++
			if c.listErr != nil {
				return nil, c.listErr
			}
			out := make([]storagev1.StorageClass, 0, len(c.classes))
			for _, sc := range c.classes {
				out = append(out, sc)
			}
			return out, nil
		},
		func(_ context.Context, name string) (*storagev1.StorageClass, error) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.gets++
			sc, ok := c.classes[name]
			if !ok {
				return nil, apierrors.NewNotFound(storagev1.Resource("storageclasses"), name)
			}
			return &sc, nil
		},
		func(sc *storagev1.StorageClass) string { return sc.Name })
}

func mustGet(t *testing.T, s *Snapshot[storagev1.StorageClass], name, wantVersion string) {
	t.Helper()
	sc, err := s.Get(context.Background(), name)
	if err != nil {
		t.Fatalf("Get(%s): %v", name, err)
	}
	if sc.Name != name || sc.ResourceVersion != wantVersion {
		t.Fatalf("Get(%s) = %s version %s, want version %s", name, sc.Name, sc.ResourceVersion, wantVersion)
	}
}

func mustBeGone(t *testing.T, s *Snapshot[storagev1.StorageClass], name string) {
	t.Helper()
	sc, err := s.Get(context.Background(), name)
	if !IsNotFound(err) {
		t.Fatalf("Get(%s) = %v, %v; want a not-found error", name, sc, err)
	}
}

func TestSnapshot_oneListServesEveryRead(t *testing.T) {
	c := newCluster("a", "b", "c")
	s := c.snapshot()
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, n := range []string{"a", "b", "c"} {
				if _, err := s.Get(context.Background(), n); err != nil {
					t.Errorf("Get(%s): %v", n, err)
				}
			}
		}()
	}
	wg.Wait()
	if c.lists != 1 || c.gets != 0 {
		t.Fatalf("30 reads made %d lists and %d gets, want 1 list and no gets", c.lists, c.gets)
	}
}

func TestSnapshot_writeThenRead(t *testing.T) {
	c := newCluster("a")
	s := c.snapshot()
	mustGet(t, s, "a", "1")

	// An update by this provider: the next read sees what was written, not the listed version.
	updated := c.put("a", "2")
	s.Put(&updated)
	mustGet(t, s, "a", "2")

	// A create by this provider after the list.
	created := c.put("new", "7")
	s.Put(&created)
	mustGet(t, s, "new", "7")

	// A delete by this provider.
	c.remove("a")
	s.Forget("a")
	mustBeGone(t, s, "a")
	if c.lists != 1 || c.gets != 0 {
		t.Fatalf("made %d lists and %d gets, want 1 list and no gets", c.lists, c.gets)
	}
}

func TestSnapshot_deletedOutsideShowsGone(t *testing.T) {
	c := newCluster("kept", "doomed")
	c.remove("doomed") // deleted outside Terraform before this run
	s := c.snapshot()
	mustGet(t, s, "kept", "1")
	mustBeGone(t, s, "doomed")

	// The next run (a new provider configuration, so a new snapshot) sees a later deletion too.
	c.remove("kept")
	mustBeGone(t, c.snapshot(), "kept")
}

func TestSnapshot_writeBeforeFirstReadIsListedLater(t *testing.T) {
	c := newCluster()
	s := c.snapshot()
	created := c.put("a", "1")
	s.Put(&created) // nothing listed yet: the list made by the first read has it
	s.Forget("never-listed")
	mustGet(t, s, "a", "1")
	if c.lists != 1 {
		t.Fatalf("made %d lists, want 1", c.lists)
	}
}

func TestSnapshot_listFailsReadsLive(t *testing.T) {
	c := newCluster("a", "default")
	c.listErr = apierrors.NewForbidden(storagev1.Resource("storageclasses"), "", errors.New("list not allowed"))
	s := c.snapshot()
	mustGet(t, s, "a", "1")
	c.remove("a")
	mustBeGone(t, s, "a") // read live: the deletion shows at once
	if c.lists != 1 || c.gets != 2 {
		t.Fatalf("made %d lists and %d gets, want 1 list (failed) and 2 gets", c.lists, c.gets)
	}
	if _, err := s.All(context.Background()); err == nil {
		t.Fatal("All after a failed list: want the list's error")
	}
}

func TestSnapshot_all(t *testing.T) {
	c := newCluster("a", "b")
	s := c.snapshot()
	created := c.put("c", "1")
	all, err := s.All(context.Background())
	if err != nil || len(all) != 3 {
		t.Fatalf("All = %d classes, %v; want a, b, c (listed now)", len(all), err)
	}
	s.Forget("a")
	s.Put(&created)
	all, err = s.All(context.Background())
	if err != nil || len(all) != 2 {
		t.Fatalf("All after Forget(a) = %d classes, %v; want b, c", len(all), err)
	}
}

func TestSnapshot_cancelledListIsRetried(t *testing.T) {
	c := newCluster("a")
	s := c.snapshot()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c.listErr = context.Canceled
	_, _ = s.Get(ctx, "a") // whatever it returns, it must not turn the snapshot into live reads
	c.listErr = nil
	mustGet(t, s, "a", "1")
	if c.lists != 2 {
		t.Fatalf("made %d lists, want 2 (the cancelled one is not taken as a failure)", c.lists)
	}
}

// The snapshots of classes and volumes keep no managed fields (no refresh reads them), neither of
// listed objects nor of objects this provider wrote; the caller's written object is left whole.
func TestSnapshot_dropsManagedFields(t *testing.T) {
	managed := []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}
	c := newCluster()
	sc := c.put("a", "1")
	sc.ManagedFields = managed
	c.classes["a"] = sc
	s := c.snapshot()
	s.trim = StorageClassSnapshot(nil).trim
	if got, err := s.Get(context.Background(), "a"); err != nil || got.ManagedFields != nil || got.ResourceVersion != "1" {
		t.Fatalf("Get(a) = %+v, %v; want version 1 without managed fields", got, err)
	}
	written := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "b", ResourceVersion: "2", ManagedFields: managed}}
	s.Put(written)
	if got, err := s.Get(context.Background(), "b"); err != nil || got.ManagedFields != nil || got.ResourceVersion != "2" {
		t.Fatalf("Get(b) after Put = %+v, %v; want version 2 without managed fields", got, err)
	}
	if len(written.ManagedFields) != 1 {
		t.Fatal("Put changed the caller's object")
	}
	if PersistentVolumeSnapshot(nil).trim == nil {
		t.Fatal("the volumes' snapshot keeps managed fields")
	}
}
