package k3smigration

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

// kubeHooks are the migration's Kubernetes side for one node: the health check (Ready, with a
// kubelet heartbeat newer than the last one before the stop) and the optional drain.
type kubeHooks struct {
	client kubernetes.Interface
	node   string

	mu        sync.Mutex
	lastRenew time.Time
	cordoned  bool
}

// MigratingAnnotation marks a node whose k3s data dir is being migrated (its value says since
// when and where to); EtcdRoleLabel is the label k3s puts on embedded-etcd servers.
const (
	MigratingAnnotation = "clusterstorage.io/k3s-data-dir-migration"
	EtcdRoleLabel       = "node-role.kubernetes.io/etcd"
)

func (k *kubeHooks) hooks(drain bool) Hooks {
	h := Hooks{NodeReady: k.ready, BeforeStop: k.noteHeartbeat, Claim: k.claim}
	if drain {
		h.Drain, h.Undrain = k.drain, k.uncordon
	}
	return h
}

// noteHeartbeat records the node lease's last renewal, before k3s stops.
func (k *kubeHooks) noteHeartbeat(ctx context.Context) error {
	lease, err := k.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, k.node, metav1.GetOptions{})
	if err != nil {
		if kube.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("reading the node lease of %s: %w", k.node, err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if lease.Spec.RenewTime != nil {
		k.lastRenew = lease.Spec.RenewTime.Time
	}
	return nil
}

// ready reports the node Ready with a lease renewed after the one noted before the stop. The API
// may be down meanwhile (on a server node it is k3s itself): that is a reason to wait, not an error.
func (k *kubeHooks) ready(ctx context.Context, _ time.Time) (bool, string, error) {
	n, err := k.client.CoreV1().Nodes().Get(ctx, k.node, metav1.GetOptions{})
	if err != nil {
		return false, "the API server does not answer yet: " + err.Error(), nil //nolint:nilerr // a reason to keep waiting: on a server node the API is k3s.
	}
	ready := false
	reason := "the node has no Ready condition"
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			ready = c.Status == corev1.ConditionTrue
			reason = fmt.Sprintf("node %s is not Ready (%s: %s)", k.node, c.Reason, c.Message)
		}
	}
	if !ready {
		return false, reason, nil
	}
	lease, err := k.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, k.node, metav1.GetOptions{})
	if err != nil {
		return false, "reading the node lease: " + err.Error(), nil //nolint:nilerr // a reason to keep waiting, as above.
	}
	k.mu.Lock()
	last := k.lastRenew
	k.mu.Unlock()
	if lease.Spec.RenewTime == nil || !lease.Spec.RenewTime.After(last) {
		return false, "the kubelet has not renewed its node lease since k3s was started", nil
	}
	return true, "", nil
}

// drain cordons the node and evicts its pods (not DaemonSet or mirror pods), waiting until they
// are gone.
func (k *kubeHooks) drain(ctx context.Context) error {
	n, err := kube.GetNode(ctx, k.client, k.node)
	if err != nil {
		return err
	}
	if !n.Spec.Unschedulable {
		tflog.Info(ctx, "cordoning the node", map[string]any{"node": k.node})
		if err := k.setUnschedulable(ctx, true); err != nil {
			return err
		}
		k.mu.Lock()
		k.cordoned = true
		k.mu.Unlock()
	}
	pods, err := k.evictable(ctx)
	if err != nil {
		return err
	}
	for _, p := range pods {
		tflog.Info(ctx, "evicting pod", map[string]any{"namespace": p.Namespace, "name": p.Name})
		err := kube.Poll(ctx, time.Second, 5*time.Minute, fmt.Sprintf("eviction of pod %s/%s", p.Namespace, p.Name), func(ctx context.Context) (bool, string, error) {
			err := k.client.PolicyV1().Evictions(p.Namespace).Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}})
			switch {
			case err == nil, apierrors.IsNotFound(err):
				return true, "", nil
			case apierrors.IsTooManyRequests(err):
				return false, "a PodDisruptionBudget does not allow it yet: " + err.Error(), nil
			default:
				return false, "", err
			}
		})
		if err != nil {
			return err
		}
	}
	return kube.Poll(ctx, time.Second, 10*time.Minute, "evicted pods to be gone from node "+k.node, func(ctx context.Context) (bool, string, error) {
		left, err := k.evictable(ctx)
		if err != nil {
			return false, "", err
		}
		if len(left) == 0 {
			return true, "", nil
		}
		names := make([]string, 0, len(left))
		for _, p := range left {
			names = append(names, p.Namespace+"/"+p.Name)
		}
		return false, "still running: " + strings.Join(names, ", "), nil
	})
}

// uncordon makes the node schedulable again, when drain cordoned it.
func (k *kubeHooks) uncordon(ctx context.Context) error {
	k.mu.Lock()
	cordoned := k.cordoned
	k.mu.Unlock()
	if !cordoned {
		return nil
	}
	// On a server node the API comes back with k3s: wait for it.
	var last error
	err := kube.Poll(ctx, time.Second, 5*time.Minute, "uncordoning node "+k.node, func(ctx context.Context) (bool, string, error) {
		last = k.setUnschedulable(ctx, false)
		if last != nil {
			return false, last.Error(), nil //nolint:nilerr // retried until the API is back.
		}
		return true, "", nil
	})
	if err == nil {
		k.mu.Lock()
		k.cordoned = false
		k.mu.Unlock()
		tflog.Info(ctx, "uncordoned the node", map[string]any{"node": k.node})
	}
	return err
}

func (k *kubeHooks) setUnschedulable(ctx context.Context, v bool) error {
	patch := fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, v)
	_, err := k.client.CoreV1().Nodes().Patch(ctx, k.node, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("setting node %s unschedulable=%t: %w", k.node, v, err)
	}
	return nil
}

// evictable lists the node's pods that a drain evicts.
func (k *kubeHooks) evictable(ctx context.Context) ([]corev1.Pod, error) {
	list, err := k.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + k.node})
	if err != nil {
		return nil, fmt.Errorf("listing pods on node %s: %w", k.node, err)
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if _, mirror := p.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
			continue
		}
		if kube.PodFinished(&p) {
			continue
		}
		daemon := false
		for _, o := range p.OwnerReferences {
			if o.Kind == "DaemonSet" {
				daemon = true
			}
		}
		if !daemon {
			out = append(out, p)
		}
	}
	return out, nil
}

// claim checks, for an embedded-etcd server, that the cluster can lose it for the downtime: the
// API server reports etcd healthy, every other etcd member is Ready, the members left keep quorum,
// and no other server is mid-migration (two at once can lose quorum). It then marks the node with
// MigratingAnnotation; the release takes the mark away (waiting for the API, which on a server
// comes back with k3s). Agents and servers without etcd (kine) have no quorum to lose: nothing is
// checked or marked.
func (k *kubeHooks) claim(ctx context.Context) (func(context.Context) error, error) {
	self, err := kube.GetNode(ctx, k.client, k.node)
	if err != nil {
		return nil, err
	}
	if self.Labels[EtcdRoleLabel] != "true" {
		return func(context.Context) error { return nil }, nil
	}
	list, err := k.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: EtcdRoleLabel + "=true"})
	if err != nil {
		return nil, fmt.Errorf("listing the cluster's etcd members: %w", err)
	}
	var notReady, migrating []string
	for _, n := range list.Items {
		if n.Name == k.node {
			continue
		}
		if v := n.Annotations[MigratingAnnotation]; v != "" {
			migrating = append(migrating, fmt.Sprintf("%s (%s)", n.Name, v))
		}
		ready := false
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				ready = true
			}
		}
		if !ready {
			notReady = append(notReady, n.Name)
		}
	}
	members := len(list.Items)
	switch {
	case len(migrating) > 0:
		return nil, fmt.Errorf("another server of the cluster is mid-migration: %s. Migrating two etcd members at once can lose quorum: wait until it is done. "+
			"If that migration was interrupted and is over, remove its mark: kubectl annotate node <name> %s-", strings.Join(migrating, ", "), MigratingAnnotation)
	case len(notReady) > 0:
		return nil, fmt.Errorf("etcd members are not Ready: %s. Stopping k3s on %s now could lose quorum: bring them back first", strings.Join(notReady, ", "), k.node)
	case members > 1 && members-1 < members/2+1:
		return nil, fmt.Errorf("the cluster has %d etcd members: stopping k3s on %s leaves %d, below quorum (%d). Add a server first", members, k.node, members-1, members/2+1)
	}
	if out, err := k.client.CoreV1().RESTClient().Get().AbsPath("/readyz/etcd").DoRaw(ctx); err != nil {
		return nil, fmt.Errorf("the API server reports etcd unhealthy (GET /readyz/etcd: %v %s): migrate no server until it is healthy", err, strings.TrimSpace(string(out)))
	}
	value := time.Now().UTC().Format(time.RFC3339) + " by terraform-provider-clusterstorage"
	if err := k.annotate(ctx, &value); err != nil {
		return nil, err
	}
	tflog.Info(ctx, "marked the etcd server as mid-migration", map[string]any{"node": k.node, "annotation": MigratingAnnotation})
	return func(ctx context.Context) error {
		var last error
		return kube.Poll(ctx, time.Second, 5*time.Minute, "taking the mid-migration mark off node "+k.node, func(ctx context.Context) (bool, string, error) {
			if last = k.annotate(ctx, nil); last != nil {
				return false, last.Error(), nil //nolint:nilerr // retried until the API is back.
			}
			return true, "", nil
		})
	}, nil
}

// annotate sets MigratingAnnotation on the node to *value, or removes it (nil).
func (k *kubeHooks) annotate(ctx context.Context, value *string) error {
	v := "null"
	if value != nil {
		v = strconv.Quote(*value)
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%s}}}`, MigratingAnnotation, v)
	if _, err := k.client.CoreV1().Nodes().Patch(ctx, k.node, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("annotating node %s (%s): %w", k.node, MigratingAnnotation, err)
	}
	return nil
}
