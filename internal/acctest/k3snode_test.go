package acctest

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

// The k3s-shaped node (CLUSTER_K3S_NODES) behaves as a real k3s node does where the k3s data dir
// migration depends on it: `systemctl stop k3s` with a pod running leaves containerd's shims and
// the container running, with the container's rootfs mounted under /run/k3s/containerd (not below
// the data dir); `systemctl start k3s` brings the node back Ready with the same container.
func TestClusterK3sNode_stopLeavesShims(t *testing.T) {
	k3s := RequireK3sNode(t)
	client := Kube(t)
	ctx := context.Background()
	name := RandomName("acc-k3s-pod")
	zero := int64(0)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeName:                      k3s.Name,
			TerminationGracePeriodSeconds: &zero,
			Containers: []corev1.Container{{
				Name: "sleeper", Image: BusyboxImage, ImagePullPolicy: corev1.PullNever,
				Command: []string{"sleep", "3607"},
			}},
		},
	}
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = k3s.Run(t, "systemctl start k3s")                                                                                //nolint:errcheck // best effort
		_ = client.CoreV1().Pods("default").Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: &zero}) //nolint:errcheck // best effort
	})
	running := func(ctx context.Context) (bool, string, error) {
		p, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return kube.KeepPolling(err)
		}
		return p.Status.Phase == corev1.PodRunning, "phase " + string(p.Status.Phase), nil
	}
	if err := kube.Poll(ctx, 200*time.Millisecond, 2*time.Minute, "pod "+name+" to run", running); err != nil {
		t.Fatal(err)
	}

	k3s.MustRun(t, "systemctl stop k3s")
	if out := k3s.MustRun(t, "systemctl is-active k3s || true"); strings.TrimSpace(out) != "inactive" {
		t.Fatalf("k3s.service is %q after stop", out)
	}
	after := k3s.MustRun(t, `ps -eo args; echo ---; findmnt -rn -o TARGET | grep -F /run/k3s/containerd/ || true`)
	for _, want := range []string{"containerd-shim-runc-v2", "sleep 3607", "/run/k3s/containerd/io.containerd.runtime.v2.task/k8s.io/"} {
		if !strings.Contains(after, want) {
			t.Errorf("after `systemctl stop k3s`, %q is gone; processes and mounts:\n%s", want, after)
		}
	}
	for _, gone := range []string{"data/current/bin/containerd --config", "kubelet --config"} {
		if strings.Contains(after, gone) {
			t.Errorf("after `systemctl stop k3s`, %q still runs", gone)
		}
	}

	k3s.MustRun(t, "systemctl start k3s")
	if err := kube.Poll(ctx, 200*time.Millisecond, 2*time.Minute, "node "+k3s.Name+" Ready and the pod running", func(ctx context.Context) (bool, string, error) {
		n, err := client.CoreV1().Nodes().Get(ctx, k3s.Name, metav1.GetOptions{})
		if err != nil {
			return kube.KeepPolling(err)
		}
		if !nodeReady(n) {
			return false, "node not Ready", nil
		}
		return running(ctx)
	}); err != nil {
		t.Fatal(err)
	}
	p, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("the pod's container was restarted across the k3s restart: %+v", p.Status.ContainerStatuses)
	}
}
