package k3smigration_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/k3smigration"
)

// An embedded-etcd server is migrated only when the cluster can lose it for the downtime: every
// other member Ready, quorum kept, no other server mid-migration. The claim marks the node while
// it migrates and the release takes the mark away. Checked against the real API server with Node
// objects of the test's own (k3s's etcd role label), which run nothing.
func TestClusterK3sMigration_haClaim(t *testing.T) {
	client := acctest.Kube(t)
	ctx := context.Background()
	var names []string
	for i := 0; i < 3; i++ {
		name := acctest.RandomName("k3sm-etcd")
		_, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{k3smigration.EtcdRoleLabel: "true", "node-role.kubernetes.io/control-plane": "true"}}}, metav1.CreateOptions{})
		must(t, err)
		t.Cleanup(func() { _ = client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
		setNodeReady(t, client, name, true)
		names = append(names, name)
	}
	claim := k3smigration.KubeHooks(client, names[0], false).Claim
	expectClaimError := func(want ...string) {
		t.Helper()
		_, err := claim(ctx)
		if err == nil {
			t.Fatalf("claim succeeded, want an error saying %q", want)
		}
		t.Logf("claim refused: %v", err)
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("the error does not say %q", w)
			}
		}
	}

	setNodeReady(t, client, names[2], false)
	expectClaimError("etcd members are not Ready", names[2])
	setNodeReady(t, client, names[2], true)

	annotateNode(t, client, names[1], `"2026-12-01T09:00:00Z by someone"`)
	expectClaimError("another server of the cluster is mid-migration", names[1], "kubectl annotate node")
	annotateNode(t, client, names[1], "null")

	release, err := claim(ctx)
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	n, err := client.CoreV1().Nodes().Get(ctx, names[0], metav1.GetOptions{})
	must(t, err)
	if n.Annotations[k3smigration.MigratingAnnotation] == "" {
		t.Errorf("the migrating node is not marked")
	}
	// While it is marked, the other servers refuse.
	if _, err := k3smigration.KubeHooks(client, names[1], false).Claim(ctx); err == nil || !strings.Contains(err.Error(), names[0]) {
		t.Errorf("a second server's claim while the first migrates: %v", err)
	}
	must(t, release(ctx))
	n, err = client.CoreV1().Nodes().Get(ctx, names[0], metav1.GetOptions{})
	must(t, err)
	if v, ok := n.Annotations[k3smigration.MigratingAnnotation]; ok {
		t.Errorf("the mark is left after the release: %q", v)
	}

	must(t, client.CoreV1().Nodes().Delete(ctx, names[2], metav1.DeleteOptions{}))
	expectClaimError("2 etcd members", "below quorum")
}

func setNodeReady(t *testing.T, client kubernetes.Interface, name string, ready bool) {
	t.Helper()
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	// The node lifecycle controller updates the node too: retry on conflicts.
	must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.NewTime(time.Now())
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, Reason: "Test", LastHeartbeatTime: now, LastTransitionTime: now}}
		_, err = client.CoreV1().Nodes().UpdateStatus(context.Background(), n, metav1.UpdateOptions{})
		return err
	}))
}

func annotateNode(t *testing.T, client kubernetes.Interface, name, value string) {
	t.Helper()
	patch := `{"metadata":{"annotations":{"` + k3smigration.MigratingAnnotation + `":` + value + `}}}`
	_, err := client.CoreV1().Nodes().Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	must(t, err)
}
