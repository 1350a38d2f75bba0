package k3smigration_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
)

// TestAccK3sDataDirMigration_rbac migrates the stand-in node's data directory with drain = true
// (cordon, the pods on the node listed and evicted, the node lease read, uncordon), then destroys
// the resource, with a kubeconfig bound to exactly examples/rbac/k3s-data-dir-migration.yaml's
// ClusterRole and its Role in kube-node-lease. The copy itself runs over SSH (sudoers), which no
// Kubernetes role governs.
func TestAccK3sDataDirMigration_rbac(t *testing.T) {
	k := startFakeKubelet(t)
	s := newStandin(t, standinOptions{})
	client := acctest.Kube(t)
	kubeconfig := acctest.RoleKubeconfig(t, client, acctest.RandomName("acc-k3sm-rbac"), "k3s-data-dir-migration.yaml",
		map[string]string{corev1.NamespaceNodeLease: corev1.NamespaceNodeLease})
	pod, err := client.CoreV1().Pods("default").Create(context.Background(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: acctest.RandomName("k3sm-rbac-pod"), Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: k.name, Containers: []corev1.Container{{Name: "app", Image: "pause", ImagePullPolicy: corev1.PullNever}},
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}},
	}, metav1.CreateOptions{})
	must(t, err)
	t.Cleanup(func() {
		zero := int64(0)
		_ = client.CoreV1().Pods("default").Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}) //nolint:errcheck // gone when evicted
	})
	target := filepath.Join(s.Root, "mnt/nvme/k3s")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{{
			Config: acctest.WithKubeconfig(migrationConfig(s, k.name, target, "  drain = true"), kubeconfig),
			Check: resource.ComposeTestCheckFunc(checkLinked(s, target), func(*terraform.State) error {
				if !k.sawCordon.Load() {
					return fmt.Errorf("the node was never seen cordoned")
				}
				if _, err := client.CoreV1().Pods("default").Get(context.Background(), pod.Name, metav1.GetOptions{}); err == nil {
					return fmt.Errorf("pod %s was not evicted", pod.Name)
				}
				n, err := client.CoreV1().Nodes().Get(context.Background(), k.name, metav1.GetOptions{})
				if err != nil || n.Spec.Unschedulable {
					return fmt.Errorf("node not uncordoned: %v", err)
				}
				return nil
			}),
		}},
	})
}
