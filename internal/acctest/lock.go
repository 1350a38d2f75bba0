package acctest

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

// Cluster-wide things whose names a test cannot choose, and so must not be made by two tests at
// once. Concurrent tests (other packages' test binaries, other people's runs on a shared
// cluster) serialize on them with LockCluster.
const (
	// LockLonghorn: Longhorn's CRDs (settings.longhorn.io, volumes.longhorn.io, in the chart's
	// templates, so owned by one release) and its class `longhorn`. Only one Longhorn release
	// can exist on a cluster, as with the real chart.
	LockLonghorn = "longhorn"
	// LockSnapshotCRDs: the VolumeSnapshot CRDs OpenEBS's openebs-crds subchart makes (and
	// keeps on uninstall). Tests that leave openebs.volume_snapshot_crds on hold it, and remove
	// the CRDs their release made.
	LockSnapshotCRDs = "volumesnapshot-crds"
	// LockMayastorNode: the openebs.io/engine=mayastor label on the cluster's nodes.
	LockMayastorNode = "mayastor-node-label"
	// LockLocalPath: rancher/local-path-provisioner's class `local-path` and namespace
	// `local-path-storage`, deployed by the test that needs them and removed at its end.
	LockLocalPath = "local-path"
	// LockHelmChartCRD: k3s's HelmChart CRD (helmcharts.helm.cattle.io), installed by the test
	// that needs it when the cluster lacks it (InstallHelmChartCRD) and removed at its end.
	LockHelmChartCRD = "helmchart-crd"
)

const (
	lockNamespace = "kube-system"
	lockDuration  = 30 * time.Second
	lockWait      = 30 * time.Minute
)

// LockCluster holds the cluster-wide lock name until the test ends: a coordination.k8s.io Lease
// kube-system/clusterstorage-acc-<name>, created by the holder, renewed while the test runs and
// deleted at its end. A Lease left by a test that died is taken over once it expires (30 s
// without renewal). It waits up to 30 minutes for the lock.
func LockCluster(t testing.TB, client kubernetes.Interface, name string) {
	t.Helper()
	leases := client.CoordinationV1().Leases(lockNamespace)
	leaseName := "clusterstorage-acc-" + name
	holder := RandomName("holder")
	var uid types.UID
	err := kube.Poll(context.Background(), time.Second, lockWait, "cluster lock "+name, func(ctx context.Context) (bool, string, error) {
		var heldBy string
		var err error
		uid, heldBy, err = takeLease(ctx, leases, leaseName, holder, nil)
		if err != nil {
			return kube.KeepPolling(err)
		}
		return uid != "", heldBy, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("holding cluster lock %s", name)
	keepLease(t, leases, leaseName, uid)
}

// takeLease creates the Lease name for holder and returns its UID; when another holder has it,
// it returns "" and who holds it. A Lease whose holder stopped renewing it (it died) is deleted,
// exactly that one, so that the next try can take it.
func takeLease(ctx context.Context, leases coordinationv1client.LeaseInterface, name, holder string, labels map[string]string) (types.UID, string, error) {
	seconds := int32(lockDuration / time.Second)
	now := metav1.NewMicroTime(time.Now())
	lease, err := leases.Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &seconds, AcquireTime: &now, RenewTime: &now},
	}, metav1.CreateOptions{})
	if err == nil {
		return lease.UID, "", nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return "", "", err
	}
	held, err := leases.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", "", err
	}
	if expired(held) {
		deleteExpired(ctx, leases, held)
		return "", "taking over an expired lock", nil
	}
	return "", "held by " + deref(held.Spec.HolderIdentity), nil
}

// expired: the Lease's holder has not renewed it for lockDuration, so it died.
func expired(lease *coordinationv1.Lease) bool {
	return lease.Spec.RenewTime != nil && time.Since(lease.Spec.RenewTime.Time) > lockDuration
}

// deleteExpired deletes exactly that version of an expired Lease (a holder that renewed it in
// the meantime keeps it).
func deleteExpired(ctx context.Context, leases coordinationv1client.LeaseInterface, lease *coordinationv1.Lease) {
	_ = leases.Delete(ctx, lease.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &lease.UID, ResourceVersion: &lease.ResourceVersion}})
}

// keepLease renews the Lease (of that UID) while the test runs and deletes it at its end.
func keepLease(t testing.TB, leases coordinationv1client.LeaseInterface, name string, uid types.UID) {
	t.Helper()
	ctx := context.Background()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(lockDuration / 3)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				lease, err := leases.Get(ctx, name, metav1.GetOptions{})
				if err != nil || lease.UID != uid {
					continue
				}
				now := metav1.NewMicroTime(time.Now())
				lease.Spec.RenewTime = &now
				_, _ = leases.Update(ctx, lease, metav1.UpdateOptions{})
			}
		}
	}()
	t.Cleanup(func() {
		close(stop)
		<-done
		if err := leases.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil && !apierrors.IsNotFound(err) {
			t.Logf("releasing lease %s: %v", name, err)
		}
	})
}

func deref(s *string) string {
	if s == nil {
		return "?"
	}
	return *s
}

// SweepOldLonghornCRDs removes the Longhorn CRDs (settings.longhorn.io, volumes.longhorn.io) that
// the project's earlier Longhorn fixtures installed from their crds/ directory (Helm never
// deletes those), which make a Longhorn release, whose CRDs are in its templates as in the real
// chart, fail with an ownership error. It deletes only such a CRD: labelled
// app.kubernetes.io/name=longhorn, no Helm owner (a real Longhorn chart's CRDs belong to its
// release), and no object of either kind anywhere (no Longhorn runs on it). Call it holding
// LockLonghorn.
func SweepOldLonghornCRDs(t testing.TB, rc *rest.Config) {
	t.Helper()
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"settings", "volumes"} {
		objs, err := dyn.Resource(schema.GroupVersionResource{Group: "longhorn.io", Version: "v1beta2", Resource: kind}).List(ctx, metav1.ListOptions{Limit: 1})
		if err == nil && len(objs.Items) > 0 {
			t.Logf("not sweeping Longhorn's CRDs: %s.longhorn.io objects exist (%s/%s)", kind, objs.Items[0].GetNamespace(), objs.Items[0].GetName())
			return
		}
	}
	crds := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	for _, name := range []string{"settings.longhorn.io", "volumes.longhorn.io"} {
		crd, err := crds.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			continue
		}
		if _, owned := crd.GetAnnotations()["meta.helm.sh/release-name"]; owned || crd.GetLabels()["app.kubernetes.io/name"] != "longhorn" {
			continue
		}
		t.Logf("deleting CRD %s left by an earlier Longhorn fixture (no Helm owner, no objects)", name)
		if err := crds.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr(crd.GetUID())}}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		err = kube.Poll(ctx, 200*time.Millisecond, time.Minute, "CRD "+name+" to go", func(ctx context.Context) (bool, string, error) {
			_, err := crds.Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), "still there", nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func ptr[T any](v T) *T { return &v }
