package acctest

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

// RsyncImage is the local cluster's rsync image (tools/kube/cluster.sh), for copy pods.
const RsyncImage = "localhost/clusterstorage/rsync:3"

// WriterScript appends numbered records to /data/records, continuing from the last one there,
// each flushed to disk before the next: what a database does, in a form a test can check byte
// for byte after its volume moved.
const WriterScript = `n=$(tail -n 1 /data/records 2>/dev/null | cut -d ' ' -f 2); n=${n:-0}
while true; do n=$((n + 1)); echo "record $n $(date +%s)" >> /data/records; sync /data/records 2>/dev/null; sleep 0.02; done`

// PodOnClaim is the spec of a pod that runs script (sh -c) in the busybox image with the claim
// mounted at /data.
func PodOnClaim(claim string, script string) corev1.PodSpec {
	grace := int64(1)
	return corev1.PodSpec{
		TerminationGracePeriodSeconds: &grace,
		Containers: []corev1.Container{{
			Name: "writer", Image: BusyboxImage, ImagePullPolicy: corev1.PullNever,
			Command:      []string{"sh", "-c", script},
			VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
		}},
		Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}},
	}
}

// ReadFunc reads a file where a volume's directory is: os.ReadFile on this machine,
// ClusterNode.ReadFile on a node.
type ReadFunc func(path string) ([]byte, error)

// StartWriter makes the Deployment "writer" in namespace, one replica running WriterScript on
// claim (recreated, never two at once), and waits until the records file in dir, the claim's
// volume's directory (read with read), holds more than 20 records.
func StartWriter(t testing.TB, client kubernetes.Interface, namespace, claim string, read ReadFunc, dir string) {
	t.Helper()
	one := int32(1)
	labels := map[string]string{"app": "writer"}
	_, err := client.AppsV1().Deployments(namespace).Create(context.Background(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "writer", Namespace: namespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: PodOnClaim(claim, WriterScript)},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	WaitRecords(t, client, namespace, read, dir, 20)
}

// WaitRecords waits until the records file in dir (read with read) holds more than n lines;
// failing, it lists the namespace's events.
func WaitRecords(t testing.TB, client kubernetes.Interface, namespace string, read ReadFunc, dir string, n int) {
	t.Helper()
	err := kube.Poll(context.Background(), 100*time.Millisecond, 2*time.Minute, fmt.Sprintf("more than %d records in %s", n, dir), func(context.Context) (bool, string, error) {
		b, _ := read(filepath.Join(dir, "records")) //nolint:errcheck // not there yet
		lines := bytes.Count(b, []byte("\n"))
		return lines > n, fmt.Sprintf("%d records", lines), nil
	})
	if err != nil {
		var lines []string
		if events, lerr := client.CoreV1().Events(namespace).List(context.Background(), metav1.ListOptions{}); lerr == nil {
			for _, e := range events.Items {
				lines = append(lines, e.InvolvedObject.Kind+"/"+e.InvolvedObject.Name+": "+e.Reason+": "+e.Message)
			}
		}
		t.Fatalf("%v (events in %s: %s)", err, namespace, strings.Join(lines, " | "))
	}
}

// CheckRecordsMoved checks that the records file in to begins with every byte of the one in
// from (a volume's data moved while its writer ran, then stopped), both read with read, and
// returns how many records from holds.
func CheckRecordsMoved(read ReadFunc, from, to string) (int, error) {
	before, err := read(filepath.Join(from, "records"))
	if err != nil {
		return 0, err
	}
	after, err := read(filepath.Join(to, "records"))
	if err != nil {
		return 0, err
	}
	if len(before) == 0 || !bytes.HasPrefix(after, before) {
		return 0, fmt.Errorf("the records in %s (%d bytes) do not begin with the %d bytes in %s", to, len(after), len(before), from)
	}
	return bytes.Count(before, []byte("\n")), nil
}
