package volumemigration

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/volumes"
)

// The migration is never alone on the cluster: other actors drive the replica count of the
// workload it stops (GitOps self-heal, KEDA, operators) or own the claim's manifest (Helm, Argo CD,
// Flux, Terraform's kubernetes provider). This file finds them from what they leave on the
// objects: labels, annotations, owner references and field managers, each as the tool documents it.
const (
	// Argo CD tracks what it manages by this annotation (tracking method annotation, the
	// default since Argo CD 2.x for new installs) or by the app.kubernetes.io/instance label.
	argoTrackingAnnotation = "argocd.argoproj.io/tracking-id"
	argoPrefix             = "argocd.argoproj.io/"
	// Flux's kustomize-controller and helm-controller label every object they apply.
	fluxKustomizeLabel = "kustomize.toolkit.fluxcd.io/name"
	fluxHelmLabel      = "helm.toolkit.fluxcd.io/name"
	// Helm labels and annotates what a release owns (helm 3.2+).
	helmManagedBy      = "Helm"
	helmReleaseName    = "meta.helm.sh/release-name"
	helmReleaseNS      = "meta.helm.sh/release-namespace"
	labelInstance      = "app.kubernetes.io/instance"
	kedaManagedByValue = "keda-operator"
	// Field managers of hashicorp/kubernetes: kubernetes_manifest applies as "Terraform"; the
	// typed resources write through client-go with the user agent "HashiCorp/1.0 Terraform/<v>",
	// which the API server records as "HashiCorp".
	tfManifestManager = "Terraform"
	tfTypedManager    = "HashiCorp"
)

// actor is something other than this provider that acts on the workload or on the claim.
type actor struct {
	// Tool is who it is ("Argo CD", "Flux", "KEDA", "HorizontalPodAutoscaler", "an operator",
	// "Helm", "Terraform's kubernetes provider"); Name names its object where one is known.
	Tool, Name string
	// On is the object it acts on ("Deployment/web", "claim data").
	On string
	// Scales is set when it drives the replica count and can start the workload again while it is
	// stopped; an HPA cannot (it does not scale a target from zero).
	Scales bool
}

func (a actor) String() string {
	s := a.Tool
	if a.Name != "" {
		s += " " + a.Name
	}
	return s + " (on " + a.On + ")"
}

// gitOpsActors are the GitOps tools whose marks meta carries.
func gitOpsActors(meta *metav1.ObjectMeta, on string) []actor {
	var out []actor
	if v, ok := meta.Annotations[argoTrackingAnnotation]; ok {
		app, _, _ := strings.Cut(v, ":")
		out = append(out, actor{Tool: "Argo CD", Name: "application " + app, On: on, Scales: true})
	} else if hasPrefixKey(meta.Annotations, argoPrefix) || hasPrefixKey(meta.Labels, argoPrefix) {
		out = append(out, actor{Tool: "Argo CD", On: on, Scales: true})
	}
	for _, l := range []string{fluxKustomizeLabel, fluxHelmLabel} {
		if v, ok := meta.Labels[l]; ok {
			kind := "Kustomization"
			if l == fluxHelmLabel {
				kind = "HelmRelease"
			}
			ns := meta.Labels[strings.TrimSuffix(l, "name")+"namespace"]
			out = append(out, actor{Tool: "Flux", Name: kind + " " + join(ns, v), On: on, Scales: true})
		}
	}
	return out
}

// workloadActors are the actors that drive the replica count of workload w (its object's meta):
// GitOps tools, an operator whose custom resource owns it, KEDA and HPAs targeting it.
func workloadActors(w volumes.Workload, meta *metav1.ObjectMeta, hpas []autoscalingv2.HorizontalPodAutoscaler) []actor {
	on := w.String()
	out := gitOpsActors(meta, on)
	if ref := metav1.GetControllerOf(meta); ref != nil {
		out = append(out, actor{Tool: "an operator", Name: "(its " + ref.Kind + " " + ref.Name + " owns it)", On: on, Scales: true})
	}
	for _, h := range hpas {
		t := h.Spec.ScaleTargetRef
		if t.Kind != w.Kind || t.Name != w.Name {
			continue
		}
		if h.Labels[labelManagedBy] == kedaManagedByValue || strings.HasPrefix(h.Name, "keda-hpa-") {
			out = append(out, actor{Tool: "KEDA", Name: "ScaledObject " + strings.TrimPrefix(h.Name, "keda-hpa-") + " (HPA " + h.Name + ")", On: on, Scales: true})
			continue
		}
		out = append(out, actor{Tool: "HorizontalPodAutoscaler", Name: h.Name, On: on})
	}
	return out
}

// claimOwners are the tools whose manifest of the claim still names the old StorageClass: on
// their next sync, upgrade or apply they fail on the immutable storageClassName or replace the
// claim, and a replacement deletes the migrated data.
func claimOwners(c *corev1.PersistentVolumeClaim) []actor {
	on := "claim " + c.Name
	out := gitOpsActors(&c.ObjectMeta, on)
	if c.Labels[labelManagedBy] == helmManagedBy || c.Annotations[helmReleaseName] != "" {
		name := c.Annotations[helmReleaseName]
		if name == "" {
			name = c.Labels[labelInstance]
		}
		out = append(out, actor{Tool: "Helm", Name: "release " + join(c.Annotations[helmReleaseNS], name), On: on})
	}
	for _, f := range c.ManagedFields {
		if f.Manager == tfManifestManager || f.Manager == tfTypedManager {
			out = append(out, actor{Tool: "Terraform's kubernetes provider", Name: "(field manager " + f.Manager + ")", On: on})
			break
		}
	}
	return out
}

// claimOwnerAdvice is what to change in an owner's source of the claim, and why.
func claimOwnerAdvice(a actor, class string) string {
	why := "storageClassName cannot change on a claim, so its next sync fails, or, where it may replace objects, it deletes the claim and makes " +
		"an empty one, and the migrated volume (its reclaim policy back to the class's, usually Delete) is deleted with the data."
	switch a.Tool {
	case "Helm":
		return fmt.Sprintf("%s manages %s: set the chart's storage class value (e.g. persistence.storageClass) to %q before the next helm upgrade. The chart still renders the old class: %s", a.Tool+" "+a.Name, a.On, class, why)
	case "Argo CD":
		return fmt.Sprintf("%s manages %s: change the class to %q in the application's source (or its Helm values) before the next sync, and do not sync it with Replace=true meanwhile. Its manifest still names the old class: %s", a.Tool+" "+a.Name, a.On, class, why)
	case "Flux":
		return fmt.Sprintf("%s manages %s: change the class to %q in its source before the next reconciliation (a Kustomization with force: true replaces the claim). Its manifest still names the old class: %s", a.Tool+" "+a.Name, a.On, class, why)
	default:
		return fmt.Sprintf("%s manages %s: set storage_class_name = %q in its kubernetes_persistent_volume_claim (or the manifest of kubernetes_manifest) in the same change; storage_class_name forces a replacement there. Its configuration still names the old class: %s", a.Tool, a.On, class, why)
	}
}

// disruptionBudgets are the PodDisruptionBudgets that select the pods of the workloads the
// migration stops with a budget that the stop violates (any minAvailable above zero, or a
// maxUnavailable below the replica count). Scaling to zero is not an eviction, so they do not
// block the migration; they are named so the user is not surprised by an alert.
func disruptionBudgets(inv *volumes.Inventory, namespace string, ws []volumes.Workload, pdbs []policyv1.PodDisruptionBudget) []string {
	var out []string
	for _, w := range ws {
		tmpl := templateLabels(inv, namespace, w)
		if tmpl == nil || w.Replicas == 0 {
			continue
		}
		for _, b := range pdbs {
			sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
			if err != nil || sel.Empty() || !sel.Matches(labels.Set(tmpl)) {
				continue
			}
			violated := false
			if v := b.Spec.MinAvailable; v != nil {
				violated = v.IntValue() > 0 || (v.StrVal != "" && v.StrVal != "0%")
			}
			if v := b.Spec.MaxUnavailable; v != nil {
				n := v.IntValue()
				violated = violated || (v.StrVal == "" && int32(n) < w.Replicas) || (v.StrVal != "" && v.StrVal != "100%")
			}
			if violated {
				out = append(out, fmt.Sprintf("PodDisruptionBudget %s selects the pods of %s", b.Name, w))
			}
		}
	}
	sort.Strings(out)
	return out
}

// templateLabels are the pod template labels of a workload, nil when it is not found.
func templateLabels(inv *volumes.Inventory, namespace string, w volumes.Workload) map[string]string {
	switch w.Kind {
	case volumes.KindDeployment:
		for _, d := range inv.Deployments {
			if d.Namespace == namespace && d.Name == w.Name {
				return d.Spec.Template.Labels
			}
		}
	case volumes.KindStatefulSet:
		for _, s := range inv.StatefulSets {
			if s.Namespace == namespace && s.Name == w.Name {
				return s.Spec.Template.Labels
			}
		}
	case volumes.KindReplicaSet:
		for _, r := range inv.ReplicaSets {
			if r.Namespace == namespace && r.Name == w.Name {
				return r.Spec.Template.Labels
			}
		}
	}
	return nil
}

// workloadMeta is the metadata of a workload of the inventory, nil when it is not found.
func workloadMeta(inv *volumes.Inventory, namespace string, w volumes.Workload) *metav1.ObjectMeta {
	find := func(n int, meta func(int) *metav1.ObjectMeta) *metav1.ObjectMeta {
		for i := range n {
			if m := meta(i); m.Namespace == namespace && m.Name == w.Name {
				return m
			}
		}
		return nil
	}
	switch w.Kind {
	case volumes.KindDeployment:
		return find(len(inv.Deployments), func(i int) *metav1.ObjectMeta { return &inv.Deployments[i].ObjectMeta })
	case volumes.KindStatefulSet:
		return find(len(inv.StatefulSets), func(i int) *metav1.ObjectMeta { return &inv.StatefulSets[i].ObjectMeta })
	case volumes.KindReplicaSet:
		return find(len(inv.ReplicaSets), func(i int) *metav1.ObjectMeta { return &inv.ReplicaSets[i].ObjectMeta })
	case volumes.KindJob:
		return find(len(inv.Jobs), func(i int) *metav1.ObjectMeta { return &inv.Jobs[i].ObjectMeta })
	case volumes.KindCronJob:
		return find(len(inv.CronJobs), func(i int) *metav1.ObjectMeta { return &inv.CronJobs[i].ObjectMeta })
	}
	return nil
}

// deletesClaims reports whether a StatefulSet's claim retention policy deletes its claims when it
// is scaled down or deleted.
func deletesClaims(p *appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy) bool {
	return p != nil && (p.WhenScaled == appsv1.DeletePersistentVolumeClaimRetentionPolicyType ||
		p.WhenDeleted == appsv1.DeletePersistentVolumeClaimRetentionPolicyType)
}

// replicasManager is the field manager that last wrote spec.replicas (or spec.suspend) of a
// workload, other than this provider: who scaled it back. "" when none is recorded.
func replicasManager(meta *metav1.ObjectMeta, field string) string {
	var best metav1.ManagedFieldsEntry
	for _, f := range meta.ManagedFields {
		if f.Manager == kube.FieldManager || f.FieldsV1 == nil {
			continue
		}
		var fields map[string]any
		if json.NewDecoder(f.FieldsV1.GetRawReader()).Decode(&fields) != nil {
			continue
		}
		spec, _ := fields["f:spec"].(map[string]any) //nolint:errcheck // absent: not this entry
		if _, ok := spec["f:"+field]; !ok {
			continue
		}
		if best.Manager == "" || (f.Time != nil && (best.Time == nil || f.Time.After(best.Time.Time))) {
			best = f
		}
	}
	if best.Manager == "" {
		return ""
	}
	if best.Subresource != "" {
		return best.Manager + " (through /" + best.Subresource + ")"
	}
	return best.Manager
}

func hasPrefixKey(m map[string]string, prefix string) bool {
	for k := range m {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

func join(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

// observeActors reads, for a new migration, who else acts on the workloads and the claim (HPAs,
// KEDA, GitOps tools, operators, owners of the claim's manifest), the PodDisruptionBudgets the
// stop violates, and the room ResourceQuotas leave for the temporary claim. What the provider's
// credentials may not list is logged and left unchecked.
func (m *Migrator) observeActors(ctx context.Context, inv *volumes.Inventory, in *planInput) error {
	ns := m.Spec.Namespace
	hpas, err := m.Client.AutoscalingV2().HorizontalPodAutoscalers(ns).List(ctx, metav1.ListOptions{})
	if err != nil && !m.unreadable(err, "HorizontalPodAutoscalers") {
		return fmt.Errorf("listing HorizontalPodAutoscalers in %s: %w", ns, err)
	}
	var hpaItems []autoscalingv2.HorizontalPodAutoscaler
	if err == nil {
		hpaItems = hpas.Items
	}
	for _, w := range in.Workloads {
		if meta := workloadMeta(inv, ns, w); meta != nil {
			in.Actors = append(in.Actors, workloadActors(w, meta, hpaItems)...)
		}
	}
	in.ClaimOwners = claimOwners(in.Claim)
	pdbs, err := m.Client.PolicyV1().PodDisruptionBudgets(ns).List(ctx, metav1.ListOptions{})
	if err != nil && !m.unreadable(err, "PodDisruptionBudgets") {
		return fmt.Errorf("listing PodDisruptionBudgets in %s: %w", ns, err)
	}
	if err == nil {
		in.Budgets = disruptionBudgets(inv, ns, in.Workloads, pdbs.Items)
	}
	quotas, err := m.Client.CoreV1().ResourceQuotas(ns).List(ctx, metav1.ListOptions{})
	if err != nil && !m.unreadable(err, "ResourceQuotas") {
		return fmt.Errorf("listing ResourceQuotas in %s: %w", ns, err)
	}
	if err == nil {
		size := sourceSize(in.Claim)
		if m.Spec.Size != nil {
			size = *m.Spec.Size
		}
		in.Quota = tightestQuota(quotas.Items, m.Spec.StorageClass, size.Value())
	}
	return nil
}

// unreadable reports (and logs) an error that only says the provider may not read what.
func (m *Migrator) unreadable(err error, what string) bool {
	if !apierrors.IsForbidden(err) {
		return false
	}
	m.log("the provider's credentials may not list "+what+"; not checked", map[string]any{"error": err.Error()})
	return true
}

// tightestQuota is the quota resource that leaves the least room for a temporary claim of class
// asking for need bytes, nil when no quota limits claims.
func tightestQuota(quotas []corev1.ResourceQuota, class string, need int64) *quotaRoom {
	perClass := class + ".storageclass.storage.k8s.io/"
	var best *quotaRoom
	bestSlack := int64(0)
	for _, q := range quotas {
		for _, r := range []string{"requests.storage", perClass + "requests.storage", "persistentvolumeclaims", perClass + "persistentvolumeclaims"} {
			hard, ok := q.Status.Hard[corev1.ResourceName(r)]
			if !ok {
				hard, ok = q.Spec.Hard[corev1.ResourceName(r)]
			}
			if !ok {
				continue
			}
			used := q.Status.Used[corev1.ResourceName(r)]
			left := hard.Value() - used.Value()
			slack := left - need
			if strings.HasSuffix(r, "persistentvolumeclaims") {
				slack = left - 1
			}
			if best == nil || slack < bestSlack {
				best, bestSlack = &quotaRoom{Quota: q.Name, Resource: r, Left: left}, slack
			}
		}
	}
	return best
}
