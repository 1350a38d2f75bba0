package acctest

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

// PodPolicySkipAnnotation makes the local cluster's pod policy leave a pod as written
// (tools/kube/testdata/pod-network-policy.yaml): CheckPodAsWritten's reference pods carry it.
const PodPolicySkipAnnotation = "test-cluster.clusterstorage.io/pod-policy"

// LocalImagePrefix begins the names of the images the local cluster builds and imports.
const LocalImagePrefix = "localhost/clusterstorage/"

// PodPolicyFields is what the local cluster's pod policy makes of a pod as written: hostNetwork
// true; on every container and init container, after the container's own env,
// KUBERNETES_SERVICE_HOST=127.0.0.1 and KUBERNETES_SERVICE_PORT=apiPort where the container does
// not set that name itself, and imagePullPolicy Never where the image is one the cluster built
// (LocalImagePrefix). Nothing else.
func PodPolicyFields(spec corev1.PodSpec, apiPort string) corev1.PodSpec {
	out := *spec.DeepCopy()
	out.HostNetwork = true
	apiEnv := []corev1.EnvVar{{Name: "KUBERNETES_SERVICE_HOST", Value: "127.0.0.1"}, {Name: "KUBERNETES_SERVICE_PORT", Value: apiPort}}
	for _, containers := range [][]corev1.Container{out.InitContainers, out.Containers} {
		for i := range containers {
			c := &containers[i]
			if strings.HasPrefix(c.Image, LocalImagePrefix) {
				c.ImagePullPolicy = corev1.PullNever
			}
			for _, v := range apiEnv {
				if !hasEnv(c.Env, v.Name) {
					c.Env = append(c.Env, v)
				}
			}
		}
	}
	return out
}

func hasEnv(env []corev1.EnvVar, name string) bool {
	for _, e := range env {
		if e.Name == name {
			return true
		}
	}
	return false
}

// APIPort is the port of the test cluster's API server, from the kubeconfig.
func APIPort(t testing.TB) string {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", Kubeconfig())
	if err != nil {
		t.Fatalf("loading %s: %v", Kubeconfig(), err)
	}
	u, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatalf("API server URL %q: %v", cfg.Host, err)
	}
	if u.Port() == "" {
		return "443"
	}
	return u.Port()
}

// CheckPodAsWritten shows that the local cluster keeps a pod as its creator wrote it, apart from
// the pod policy's fields: it creates written (a server-side dry run: the API server admits,
// defaults and validates it, and stores nothing), then a reference pod, written with exactly
// PodPolicyFields added and the policy told to skip it, the same way, and requires the two specs
// the API server returns to be equal. Whatever else admission did to the one pod it did to the
// other, so every difference the policy made is one PodPolicyFields names. written's labels and
// annotations must come back unchanged. It returns the admitted pod.
func CheckPodAsWritten(t testing.TB, client kubernetes.Interface, written *corev1.Pod) *corev1.Pod {
	t.Helper()
	got, err := createDryRun(client, written.DeepCopy())
	if err != nil {
		t.Fatalf("creating pod %s/%s (dry run): %v", written.Namespace, written.Name, err)
	}
	ref := written.DeepCopy()
	ref.Spec = PodPolicyFields(written.Spec, APIPort(t))
	if ref.Annotations == nil {
		ref.Annotations = map[string]string{}
	}
	ref.Annotations[PodPolicySkipAnnotation] = "skip"
	want, err := createDryRun(client, ref)
	if err != nil {
		t.Fatalf("creating the reference pod (dry run): %v", err)
	}
	if !want.Spec.HostNetwork || written.Spec.HostNetwork {
		t.Fatalf("the reference pod: hostNetwork %v (written: %v)", want.Spec.HostNetwork, written.Spec.HostNetwork)
	}
	if !apiequality.Semantic.DeepEqual(want.Spec, got.Spec) {
		t.Errorf("pod %s as admitted differs from the pod as written plus the pod policy's fields (-want +got):\n%s", written.Name, diff.Diff(want.Spec, got.Spec))
	}
	if !apiequality.Semantic.DeepEqual(written.Labels, got.Labels) || !apiequality.Semantic.DeepEqual(written.Annotations, got.Annotations) {
		t.Errorf("metadata: labels %v, annotations %v; written: %v, %v", got.Labels, got.Annotations, written.Labels, written.Annotations)
	}
	return got
}

// createDryRun creates pod as a server-side dry run, waiting for its namespace's default
// ServiceAccount (a new namespace has none for a moment).
func createDryRun(client kubernetes.Interface, pod *corev1.Pod) (*corev1.Pod, error) {
	var created *corev1.Pod
	err := kube.Poll(context.Background(), 200*time.Millisecond, 30*time.Second, "the dry run of pod "+pod.Name, func(ctx context.Context) (bool, string, error) {
		p, err := client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		switch {
		case err == nil:
			created = p
			return true, "", nil
		case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "serviceaccount"):
			return false, err.Error(), nil
		default:
			return false, "", err
		}
	})
	return created, err
}

// PolicyDiff lists, one per line, the fields of the admitted spec that differ from the spec as
// written and that the pod policy sets (for test logs).
func PolicyDiff(written, admitted corev1.PodSpec) string {
	var lines []string
	if written.HostNetwork != admitted.HostNetwork {
		lines = append(lines, fmt.Sprintf("hostNetwork: %v -> %v", written.HostNetwork, admitted.HostNetwork))
	}
	for i, c := range admitted.Containers {
		if i >= len(written.Containers) {
			break
		}
		w := written.Containers[i]
		if w.ImagePullPolicy != c.ImagePullPolicy {
			lines = append(lines, fmt.Sprintf("containers[%s].imagePullPolicy: %q -> %q", c.Name, w.ImagePullPolicy, c.ImagePullPolicy))
		}
		for _, e := range c.Env {
			if !hasEnv(w.Env, e.Name) {
				lines = append(lines, fmt.Sprintf("containers[%s].env: + %s=%s", c.Name, e.Name, e.Value))
			}
		}
	}
	return strings.Join(lines, "\n")
}
