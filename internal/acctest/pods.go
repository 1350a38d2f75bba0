package acctest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

// Images the local cluster builds and imports (tools/kube/cluster.sh); pods using them set
// imagePullPolicy: Never. They need no hostNetwork or KUBERNETES_SERVICE_HOST of their own: the
// local cluster's pod policy (tools/kube/testdata/pod-network-policy.yaml) gives every new pod
// those, as a pod network would.
const (
	BusyboxImage = "localhost/clusterstorage/busybox:1"
	FioImage     = "localhost/clusterstorage/fio:3.33"
)

// Namespace makes a namespace named for this run (RandomName(prefix)) and deletes it when the
// test ends.
func Namespace(t testing.TB, client kubernetes.Interface, prefix string) string {
	t.Helper()
	name := RandomName(prefix)
	if _, err := client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	t.Cleanup(func() {
		_ = client.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{}) //nolint:errcheck // best effort
	})
	return name
}

// WaitForPod waits until the pod has succeeded. A failed pod, or a timeout, is an error that
// carries the pod's events and log.
func WaitForPod(ctx context.Context, client kubernetes.Interface, namespace, name string, timeout time.Duration) error {
	err := kube.Poll(ctx, 200*time.Millisecond, timeout, "pod "+namespace+"/"+name+" to succeed",
		func(ctx context.Context) (bool, string, error) {
			pod, err := client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return kube.KeepPolling(err)
			}
			switch pod.Status.Phase {
			case corev1.PodSucceeded:
				return true, "", nil
			case corev1.PodFailed:
				return false, "", fmt.Errorf("pod %s/%s failed", namespace, name)
			}
			return false, "phase " + string(pod.Status.Phase), nil
		})
	if err != nil {
		events := kube.EventsFor(context.Background(), client, namespace, "Pod", name)
		return fmt.Errorf("%w; events: %s", err, strings.Join(events, " | "))
	}
	return nil
}

// DeletePodAndClaim deletes a pod and a claim and waits until both are gone, reporting failures
// on t. Either name may be empty.
func DeletePodAndClaim(t testing.TB, client kubernetes.Interface, namespace, pod, claim string) {
	t.Helper()
	ctx := context.Background()
	zero := int64(0)
	if pod != "" {
		err := client.CoreV1().Pods(namespace).Delete(ctx, pod, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting pod %s: %v", pod, err)
		}
	}
	if claim != "" {
		err := client.CoreV1().PersistentVolumeClaims(namespace).Delete(ctx, claim, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting claim %s: %v", claim, err)
		}
	}
	err := kube.Poll(ctx, 200*time.Millisecond, time.Minute, "pod and claim to be deleted", func(ctx context.Context) (bool, string, error) {
		if pod != "" {
			if _, err := client.CoreV1().Pods(namespace).Get(ctx, pod, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false, "pod still there", nil
			}
		}
		if claim != "" {
			if _, err := client.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, claim, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false, "claim still there", nil
			}
		}
		return true, "", nil
	})
	if err != nil {
		t.Errorf("cleaning up: %v", err)
	}
}
