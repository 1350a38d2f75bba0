package benchmark

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

// AnnotationExpires is set on the pod and claim of every run: the time (RFC 3339) after which
// the run that made them has surely ended, cleanup included (its read deadline plus
// cleanupTimeout). An object still there later was left by a provider that was killed.
const AnnotationExpires = "clusterstorage.io/benchmark-expires"

// AnnotationHeartbeat is set on the pod and claim of every run and renewed while the provider
// that made them runs (kube.Heartbeat). Once it stopped (kube.HeartbeatStopped), the run's
// provider is gone (killed, its machine lost) and the next run in the namespace removes its
// objects at once instead of at AnnotationExpires, which lies the whole read timeout ahead.
const AnnotationHeartbeat = "clusterstorage.io/benchmark-heartbeat"

// orphanAge is how old an object of a run must be to count as left behind when it carries no
// AnnotationExpires (made by a provider version before it).
const orphanAge = 24 * time.Hour

// orphaned reports whether a run's object was left behind by a run that no longer runs at now:
// its heartbeat stopped (stale), or the run has surely ended (expired). An unreadable heartbeat
// is not taken for a stale one.
func orphaned(meta metav1.ObjectMeta, now time.Time) bool {
	return kube.HeartbeatStopped(meta, AnnotationHeartbeat, now) || expired(meta, now)
}

// expiresAt is the AnnotationExpires value of a run whose context is ctx.
func expiresAt(ctx context.Context) string {
	return deadline(ctx).Add(cleanupTimeout).UTC().Format(time.RFC3339)
}

// expired reports whether a run's object is left behind at now.
func expired(meta metav1.ObjectMeta, now time.Time) bool {
	if v, ok := meta.Annotations[AnnotationExpires]; ok {
		t, err := time.Parse(time.RFC3339, v)
		return err == nil && now.After(t)
	}
	return now.Sub(meta.CreationTimestamp.Time) > orphanAge
}

// sweep removes what runs of killed providers left in namespace: pods, claims and ConfigMaps
// labelled with a run id (LabelRun) whose run no longer runs (orphaned: its heartbeat stopped, or
// it has surely ended). A run whose heartbeat is renewed is never touched. Cached results
// (LabelCache) are never touched. A claim goes as a run's own cleanup removes it, so a static
// volume it bound is Available again. It returns one line per run it cleaned up, for a warning;
// problems come back as errors, and do not stop the benchmark.
func sweep(ctx context.Context, client kubernetes.Interface, namespace string, now time.Time, log func(string, map[string]any)) ([]string, error) {
	sel := metav1.ListOptions{LabelSelector: LabelRun + "," + labelManagedBy + "=" + managedBy}
	pods, err := client.CoreV1().Pods(namespace).List(ctx, sel)
	if err != nil {
		return nil, fmt.Errorf("listing benchmark pods in %s: %w", namespace, err)
	}
	claims, err := client.CoreV1().PersistentVolumeClaims(namespace).List(ctx, sel)
	if err != nil {
		return nil, fmt.Errorf("listing benchmark claims in %s: %w", namespace, err)
	}
	cms, err := client.CoreV1().ConfigMaps(namespace).List(ctx, sel)
	if err != nil {
		return nil, fmt.Errorf("listing benchmark ConfigMaps in %s: %w", namespace, err)
	}
	runs := map[string]*cleanup{}
	what := map[string][]string{}
	run := func(meta metav1.ObjectMeta) *cleanup {
		id := meta.Labels[LabelRun]
		if runs[id] == nil {
			runs[id] = &cleanup{client: client, namespace: namespace, log: log}
		}
		return runs[id]
	}
	for _, p := range pods.Items {
		if orphaned(p.ObjectMeta, now) {
			run(p.ObjectMeta).pod = p.Name
			what[p.Labels[LabelRun]] = append(what[p.Labels[LabelRun]], "pod "+p.Name)
		}
	}
	for i := range claims.Items {
		c := &claims.Items[i]
		if orphaned(c.ObjectMeta, now) {
			run(c.ObjectMeta).claim = c
			what[c.Labels[LabelRun]] = append(what[c.Labels[LabelRun]], "claim "+c.Name)
		}
	}
	var configMaps []corev1.ConfigMap
	for _, c := range cms.Items {
		if _, cached := c.Labels[LabelCache]; !cached && orphaned(c.ObjectMeta, now) {
			configMaps = append(configMaps, c)
			what[c.Labels[LabelRun]] = append(what[c.Labels[LabelRun]], "ConfigMap "+c.Name)
		}
	}
	ids := make([]string, 0, len(what))
	for id := range what {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var done []string
	var errs []string
	for _, id := range ids {
		log("removing what a killed run left", map[string]any{"namespace": namespace, "run": id, "objects": strings.Join(what[id], ", ")})
		if c := runs[id]; c != nil {
			if err := c.run(ctx); err != nil {
				errs = append(errs, fmt.Sprintf("run %s: %v", id, err))
				continue
			}
		}
		done = append(done, fmt.Sprintf("run %s: %s", id, strings.Join(what[id], ", ")))
	}
	for _, c := range configMaps {
		if err := client.CoreV1().ConfigMaps(namespace).Delete(ctx, c.Name, metav1.DeleteOptions{}); err != nil && !kube.IsNotFound(err) {
			errs = append(errs, fmt.Sprintf("ConfigMap %s: %v", c.Name, err))
		}
	}
	if len(errs) > 0 {
		return done, fmt.Errorf("removing what killed runs left in %s: %s", namespace, strings.Join(errs, "; "))
	}
	return done, nil
}

// SweepNamespaces sweeps each namespace once and reports what it removed, and any problem, as
// warnings: a leftover never stops a benchmark.
func SweepNamespaces(ctx context.Context, client kubernetes.Interface, namespaces []string, diags *diag.Diagnostics) {
	log := func(msg string, fields map[string]any) { tflog.Info(ctx, msg, fields) }
	seen := map[string]bool{}
	for _, ns := range namespaces {
		if seen[ns] {
			continue
		}
		seen[ns] = true
		done, err := sweep(ctx, client, ns, time.Now(), log)
		if len(done) > 0 {
			diags.AddWarning("Removed what a killed benchmark left",
				fmt.Sprintf("Namespace %q held objects of benchmark runs that ended without cleaning up (a provider that was killed: their heartbeat stopped): %s. "+
					"They are removed; a static volume their claim bound is Available again.", ns, strings.Join(done, "; ")))
		}
		if err != nil {
			diags.AddWarning("Leftovers of killed benchmarks not all removed", err.Error()+
				fmt.Sprintf("\nRemove them by hand: objects labelled %s in namespace %q.", LabelRun, ns))
		}
	}
}
