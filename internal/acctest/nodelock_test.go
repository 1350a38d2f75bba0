package acctest

import (
	"sync"
	"testing"
	"time"
)

// TestClusterNodesLock: on the cluster's Leases, a test holding the nodes alone waits for the one
// holding them shared to end, and a test asking for them shared meanwhile waits for it in turn.
func TestClusterNodesLock(t *testing.T) {
	client := Kube(t)
	const hold = 2 * time.Second
	var mu sync.Mutex
	times := map[string]time.Time{}
	mark := func(event string) {
		mu.Lock()
		defer mu.Unlock()
		times[event] = time.Now()
	}
	sharedHeld, aloneHeld := make(chan struct{}), make(chan struct{})
	t.Run("group", func(t *testing.T) {
		t.Run("first shared", func(t *testing.T) {
			t.Parallel()
			holdNodesShared(t, client)
			close(sharedHeld)
			time.Sleep(hold)
			mark("first shared released")
		})
		t.Run("alone", func(t *testing.T) {
			t.Parallel()
			<-sharedHeld
			holdNodesAlone(t, client)
			mark("alone held")
			close(aloneHeld)
			time.Sleep(hold)
			mark("alone released")
		})
		t.Run("second shared", func(t *testing.T) {
			t.Parallel()
			<-aloneHeld
			holdNodesShared(t, client)
			mark("second shared held")
		})
	})
	if !times["alone held"].After(times["first shared released"]) {
		t.Errorf("held alone at %v, before the shared holder let go at %v", times["alone held"], times["first shared released"])
	}
	if !times["second shared held"].After(times["alone released"]) {
		t.Errorf("held shared at %v, before the test holding the nodes alone let go at %v", times["second shared held"], times["alone released"])
	}
}
