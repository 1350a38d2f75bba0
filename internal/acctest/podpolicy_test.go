package acctest

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The local cluster's pod policy (tools/kube/testdata/pod-network-policy.yaml) stands in for the
// pod network it lacks: a pod written without hostNetwork, KUBERNETES_SERVICE_HOST/PORT or
// imagePullPolicy Never is admitted with exactly those (Never only for the cluster's own images)
// and nothing else changed (a container's own KUBERNETES_SERVICE_HOST stays), and it runs and
// sees the API server's address.
func TestClusterPodPolicy(t *testing.T) {
	client := Kube(t)
	if !LocalCluster() {
		t.Skip("the pod policy belongs to the project's local cluster (tools/kube)")
	}
	ns := Namespace(t, client, "acc-podpolicy")
	noToken, grace := false, int64(1)
	written := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "as-written", Namespace: ns, Labels: map[string]string{"app": "podpolicy"}, Annotations: map[string]string{"note": "kept"}},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: &grace,
			// The ServiceAccount admission plugin names the token volume it adds at random, which
			// two dry runs of one pod would not share.
			AutomountServiceAccountToken: &noToken,
			InitContainers: []corev1.Container{{
				Name: "init", Image: BusyboxImage, Command: []string{"true"},
			}},
			Containers: []corev1.Container{{
				Name: "plain", Image: BusyboxImage, ImagePullPolicy: corev1.PullIfNotPresent,
				Command:      []string{"sh", "-c", "echo $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT"},
				Env:          []corev1.EnvVar{{Name: "FOO", Value: "bar"}},
				Resources:    corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: k8sresource.MustParse("8Mi")}},
				VolumeMounts: []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}},
			}, {
				Name: "own-api", Image: BusyboxImage,
				Command: []string{"sh", "-c", "echo $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT"},
				Env:     []corev1.EnvVar{{Name: "KUBERNETES_SERVICE_HOST", Value: "10.9.8.7"}},
			}},
			Volumes: []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
	got := CheckPodAsWritten(t, client, written)
	t.Logf("what the policy changed:\n%s", PolicyDiff(written.Spec, got.Spec))

	port := APIPort(t)
	env := func(c corev1.Container, name string) string {
		for _, e := range c.Env {
			if e.Name == name {
				return e.Value
			}
		}
		return "<unset>"
	}
	if !got.Spec.HostNetwork || got.Spec.DNSPolicy != corev1.DNSClusterFirst {
		t.Errorf("hostNetwork %v, dnsPolicy %s: want true, ClusterFirst (as written)", got.Spec.HostNetwork, got.Spec.DNSPolicy)
	}
	for _, c := range append(append([]corev1.Container{}, got.Spec.InitContainers...), got.Spec.Containers...) {
		wantHost := "127.0.0.1"
		if c.Name == "own-api" {
			wantHost = "10.9.8.7" // its own value stays
		}
		if h, p := env(c, "KUBERNETES_SERVICE_HOST"), env(c, "KUBERNETES_SERVICE_PORT"); h != wantHost || p != port {
			t.Errorf("container %s: KUBERNETES_SERVICE_HOST=%s KUBERNETES_SERVICE_PORT=%s, want %s, %s", c.Name, h, p, wantHost, port)
		}
		if c.ImagePullPolicy != corev1.PullNever {
			t.Errorf("container %s: imagePullPolicy %s, want Never", c.Name, c.ImagePullPolicy)
		}
	}
	if c := got.Spec.Containers[0]; env(c, "FOO") != "bar" || c.Env[0].Name != "FOO" {
		t.Errorf("container plain: env %v: its own variable first, unchanged", c.Env)
	}

	// An image the cluster did not build keeps its pull policy (dry run only: it cannot be pulled).
	other := written.DeepCopy()
	other.Name = "other-image"
	other.Spec.Containers[1].Image = "localhost:1/clusterstorage/not-ours:1"
	if c := CheckPodAsWritten(t, client, other).Spec.Containers[1]; c.ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("image %s: imagePullPolicy %s, want IfNotPresent (Kubernetes' default, as written)", c.Image, c.ImagePullPolicy)
	}

	// The pod as written runs (no pod network here: it has the node's) and sees the addresses.
	ctx := context.Background()
	if _, err := client.CoreV1().Pods(ns).Create(ctx, written, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := WaitForPod(ctx, client, ns, written.Name, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	for c, want := range map[string]string{"plain": "127.0.0.1:" + port, "own-api": "10.9.8.7:" + port} {
		out, err := client.CoreV1().Pods(ns).GetLogs(written.Name, &corev1.PodLogOptions{Container: c}).DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(string(out)) != want {
			t.Errorf("container %s printed %q, want %q", c, out, want)
		}
	}
}
