package acctest

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

// The machine nodes' power is a reader-writer lock between concurrent tests (the acceptance
// packages under two CLIs run side by side): a test that powers a node off or stops its kubelet
// holds the nodes alone; a test that needs every node Ready holds them shared, with any number of
// others. The CI run once failed a three-node test because another package's test had powered
// node 2 off a moment before.
//
// Both sides announce themselves before they look at the other (a Lease each), so a test that
// holds them shared and one that holds them alone never both go ahead; a test waiting to hold
// them alone keeps new shared holders out, so it is not starved.
const (
	// nodesAloneLock is the LockCluster name of the one test holding the nodes alone.
	nodesAloneLock = "nodes"
	// nodesSharedLabel marks the Leases of the tests holding the nodes shared, one each.
	nodesSharedLabel = "clusterstorage.io/acc-nodes-shared"
)

// holdNodesAlone waits until no other test holds the machine nodes, shared or alone, and holds
// them alone until the test ends.
func holdNodesAlone(t testing.TB, client kubernetes.Interface) {
	t.Helper()
	LockCluster(t, client, nodesAloneLock)
	leases := client.CoordinationV1().Leases(lockNamespace)
	selector := metav1.ListOptions{LabelSelector: nodesSharedLabel + "=true"}
	err := kube.Poll(context.Background(), time.Second, lockWait, "the tests holding the nodes shared to end", func(ctx context.Context) (bool, string, error) {
		shared, err := leases.List(ctx, selector)
		if err != nil {
			return kube.KeepPolling(err)
		}
		live := 0
		for i := range shared.Items {
			if expired(&shared.Items[i]) {
				deleteExpired(ctx, leases, &shared.Items[i])
				continue
			}
			live++
		}
		return live == 0, fmt.Sprintf("%d tests hold them", live), nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// holdNodesShared waits until no test holds the machine nodes alone, and holds them shared until
// the test ends.
func holdNodesShared(t testing.TB, client kubernetes.Interface) {
	t.Helper()
	leases := client.CoordinationV1().Leases(lockNamespace)
	aloneName := "clusterstorage-acc-" + nodesAloneLock
	holder := RandomName("holder")
	name := "clusterstorage-acc-nodes-shared-" + holder
	var uid types.UID
	err := kube.Poll(context.Background(), time.Second, lockWait, "the test holding the nodes alone to end", func(ctx context.Context) (bool, string, error) {
		var err error
		var heldBy string
		if uid, heldBy, err = takeLease(ctx, leases, name, holder, map[string]string{nodesSharedLabel: "true"}); err != nil {
			return kube.KeepPolling(err)
		}
		if uid == "" {
			return false, heldBy, nil
		}
		alone, err := leases.Get(ctx, aloneName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		if err == nil && expired(alone) {
			deleteExpired(ctx, leases, alone)
			return true, "", nil
		}
		// Held alone (or not known): step back, so that the test waiting for it can go ahead.
		if derr := leases.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); derr != nil && !apierrors.IsNotFound(derr) {
			return kube.KeepPolling(derr)
		}
		if err != nil {
			return kube.KeepPolling(err)
		}
		return false, "held by " + deref(alone.Spec.HolderIdentity), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	keepLease(t, leases, name, uid)
}
