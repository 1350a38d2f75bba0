package volumemigration

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	psaapi "k8s.io/pod-security-admission/api"
	psapolicy "k8s.io/pod-security-admission/policy"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/volumes"
)

func TestWorkloadActors(t *testing.T) {
	web := volumes.Workload{Kind: volumes.KindDeployment, Name: "web", Replicas: 2}
	yes := true
	hpas := []autoscalingv2.HorizontalPodAutoscaler{
		{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "web"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "keda-hpa-web-scaler", Labels: map[string]string{labelManagedBy: "keda-operator"}},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "web"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Spec: autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "api"}}},
	}
	for _, tc := range []struct {
		name string
		meta metav1.ObjectMeta
		hpas []autoscalingv2.HorizontalPodAutoscaler
		want []string // actor.String() of each, and whether it scales: "+" or "-"
	}{
		{"nothing", metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}, nil, nil},
		{"argo tracking id", metav1.ObjectMeta{Annotations: map[string]string{argoTrackingAnnotation: "shop:apps/Deployment:default/web"}}, nil,
			[]string{"+Argo CD application shop (on Deployment/web)"}},
		{"argo other mark", metav1.ObjectMeta{Labels: map[string]string{"argocd.argoproj.io/instance": "shop"}}, nil, []string{"+Argo CD (on Deployment/web)"}},
		{"flux kustomization", metav1.ObjectMeta{Labels: map[string]string{fluxKustomizeLabel: "apps", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}}, nil,
			[]string{"+Flux Kustomization flux-system/apps (on Deployment/web)"}},
		{"flux helmrelease", metav1.ObjectMeta{Labels: map[string]string{fluxHelmLabel: "web", "helm.toolkit.fluxcd.io/namespace": "apps"}}, nil,
			[]string{"+Flux HelmRelease apps/web (on Deployment/web)"}},
		{"operator", metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{Kind: "PostgresCluster", Name: "db", Controller: &yes}}}, nil,
			[]string{"+an operator (its PostgresCluster db owns it) (on Deployment/web)"}},
		{"hpa and keda", metav1.ObjectMeta{}, hpas, []string{"-HorizontalPodAutoscaler web (on Deployment/web)", "+KEDA ScaledObject web-scaler (HPA keda-hpa-web-scaler) (on Deployment/web)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, a := range workloadActors(web, &tc.meta, tc.hpas) {
				sign := "-"
				if a.Scales {
					sign = "+"
				}
				got = append(got, sign+a.String())
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestCheckActors(t *testing.T) {
	in := planInput{Actors: []actor{{Tool: "HorizontalPodAutoscaler", Name: "web", On: "Deployment/web"}}}
	if p := checkActors("ns/data", in); p != nil {
		t.Errorf("an HPA (which does not scale from zero) is refused: %v", p)
	}
	in.Actors = append(in.Actors, actor{Tool: "Argo CD", Name: "application shop", On: "Deployment/web", Scales: true})
	p := checkActors("ns/data", in)
	if p == nil || p.Attribute != "controllers_paused" || !strings.Contains(p.Detail, "Argo CD application shop (on Deployment/web)") || strings.Contains(p.Detail, "HorizontalPodAutoscaler") {
		t.Fatalf("Argo CD: %+v", p)
	}
	in.ControllersPaused = true
	if p := checkActors("ns/data", in); p != nil {
		t.Errorf("refused with controllers_paused = true: %v", p)
	}
}

func TestClaimOwners(t *testing.T) {
	c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data",
		Labels:        map[string]string{labelManagedBy: "Helm", labelInstance: "db"},
		Annotations:   map[string]string{helmReleaseName: "db", helmReleaseNS: "apps"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager"}, {Manager: "HashiCorp"}},
	}}
	var got []string
	for _, a := range claimOwners(c) {
		got = append(got, a.String())
	}
	want := "Helm release apps/db (on claim data)|Terraform's kubernetes provider (field manager HashiCorp) (on claim data)"
	if strings.Join(got, "|") != want {
		t.Errorf("got %q, want %q", strings.Join(got, "|"), want)
	}
	for _, a := range claimOwners(c) {
		advice := claimOwnerAdvice(a, "openebs-hostpath")
		if !strings.Contains(advice, `"openebs-hostpath"`) || !strings.Contains(advice, "deleted with the data") {
			t.Errorf("advice for %s: %s", a.Tool, advice)
		}
	}
	if owners := claimOwners(&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "x"}}); len(owners) != 0 {
		t.Errorf("a plain claim has owners: %v", owners)
	}
}

func TestReplicasManager(t *testing.T) {
	at := func(s int) *metav1.Time { return &metav1.Time{Time: time.Unix(int64(s), 0)} }
	fields := func(v string) *metav1.FieldsV1 { return metav1.NewFieldsV1(v) }
	meta := &metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{
		{Manager: "kubectl-client-side-apply", Time: at(1), FieldsV1: fields(`{"f:spec":{"f:replicas":{},"f:template":{}}}`)},
		{Manager: kube.FieldManager, Time: at(3), FieldsV1: fields(`{"f:spec":{"f:replicas":{}}}`)},
		{Manager: "argocd-controller", Time: at(5), FieldsV1: fields(`{"f:spec":{"f:replicas":{}}}`)},
		{Manager: "kube-controller-manager", Time: at(9), FieldsV1: fields(`{"f:status":{"f:replicas":{}}}`)},
	}}
	if got := replicasManager(meta, "replicas"); got != "argocd-controller" {
		t.Errorf("got %q", got)
	}
	meta.ManagedFields = append(meta.ManagedFields, metav1.ManagedFieldsEntry{Manager: "keda", Subresource: "scale", Time: at(7), FieldsV1: fields(`{"f:spec":{"f:replicas":{}}}`)})
	if got := replicasManager(meta, "replicas"); got != "keda (through /scale)" {
		t.Errorf("got %q", got)
	}
	if got := replicasManager(meta, "suspend"); got != "" {
		t.Errorf("suspend: got %q", got)
	}
}

// TestRecordsBelong: a record binds to the claim it began on (its UID) and, from the swap on, to
// the claim made again on its new volume; a record of a rolled-back migration, or of another
// claim of the same name, is not taken for one in progress.
func TestRecordsBelong(t *testing.T) {
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", UID: "uid-1"}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-src"}}
	remade := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", UID: "uid-2"}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-new"}}
	other := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", UID: "uid-9"}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-other"}}
	rec := func(ph phase) progress {
		return progress{Phase: ph, ClaimUID: "uid-1", SourceVolume: "pv-src", TargetVolume: "pv-new"}
	}
	for _, tc := range []struct {
		name string
		got  bool
		want bool
	}{
		{"claim: its own record", rec(phaseStopped).belongsTo(claim), true},
		{"claim: made again on the new volume", rec(phaseStarting).belongsTo(remade), true},
		{"claim: another claim of the name (a restore from a backup)", rec(phaseCopying).belongsTo(other), false},
		{"claim: a record of an earlier build", progress{Phase: phaseCopying}.belongsTo(other), true},
		{"volume: swap under way, the claim still the source", volumeRecordBelongs(rec(phaseSwapping), claim, rec(phaseStopped)), true},
		{"volume: left by a rollback (the claim has no record)", volumeRecordBelongs(rec(phaseSwapping), claim, progress{}), false},
		{"volume: the claim deleted in the swap", volumeRecordBelongs(rec(phaseSwapping), nil, progress{}), true},
		{"volume: the claim made again on it", volumeRecordBelongs(rec(phaseStarting), remade, progress{}), true},
		{"volume: another claim of the name", volumeRecordBelongs(rec(phaseStarting), other, progress{}), false},
		{"volume: a record of an earlier build", volumeRecordBelongs(progress{Phase: phaseStarting, TargetVolume: "pv-new"}, other, progress{}), true},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %t, want %t", tc.name, tc.got, tc.want)
		}
	}
}

func TestQuota(t *testing.T) {
	q := func(name string, hard, used map[string]string) corev1.ResourceQuota {
		list := func(m map[string]string) corev1.ResourceList {
			out := corev1.ResourceList{}
			for k, v := range m {
				out[corev1.ResourceName(k)] = k8sresource.MustParse(v)
			}
			return out
		}
		return corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.ResourceQuotaStatus{Hard: list(hard), Used: list(used)}}
	}
	quotas := []corev1.ResourceQuota{
		q("cpu", map[string]string{"requests.cpu": "4"}, map[string]string{"requests.cpu": "1"}),
		q("storage", map[string]string{"requests.storage": "10Gi"}, map[string]string{"requests.storage": "8Gi"}),
		q("fast", map[string]string{"fast.storageclass.storage.k8s.io/persistentvolumeclaims": "3"}, map[string]string{"fast.storageclass.storage.k8s.io/persistentvolumeclaims": "3"}),
	}
	gi := int64(1 << 30)
	room := tightestQuota(quotas, "slow", 1*gi)
	if room == nil || room.Quota != "storage" || room.Left != 2*gi {
		t.Fatalf("slow, 1Gi: %+v", room)
	}
	if p := checkQuota("ns/data", planInput{Quota: room, Needed: gi, StorageClass: "slow"}); p != nil {
		t.Errorf("1Gi of 2Gi left refused: %v", p)
	}
	if p := checkQuota("ns/data", planInput{Quota: tightestQuota(quotas, "slow", 3*gi), Needed: 3 * gi, StorageClass: "slow"}); p == nil || !strings.Contains(p.Summary, "storage") {
		t.Errorf("3Gi of 2Gi left: %+v", p)
	}
	room = tightestQuota(quotas, "fast", gi)
	if room == nil || room.Resource != "fast.storageclass.storage.k8s.io/persistentvolumeclaims" {
		t.Fatalf("fast: %+v", room)
	}
	if p := checkQuota("ns/data", planInput{Quota: room, Needed: gi, StorageClass: "fast"}); p == nil || !strings.Contains(p.Detail, "one more claim") {
		t.Errorf("no claim left on fast: %+v", p)
	}
	if room := tightestQuota(quotas[:1], "slow", gi); room != nil {
		t.Errorf("a quota without storage limits: %+v", room)
	}
}

func TestDisruptionBudgets(t *testing.T) {
	labels := map[string]string{"app": "db"}
	inv := &volumes.Inventory{StatefulSets: []appsv1.StatefulSet{{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns"},
		Spec: appsv1.StatefulSetSpec{Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}}}}}}
	ws := []volumes.Workload{{Kind: volumes.KindStatefulSet, Name: "db", Replicas: 3}}
	one, all := intstr.FromInt32(1), intstr.FromInt32(3)
	pdb := func(name string, sel map[string]string, minAvail, maxUnavail *intstr.IntOrString) policyv1.PodDisruptionBudget {
		return policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: policyv1.PodDisruptionBudgetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: sel}, MinAvailable: minAvail, MaxUnavailable: maxUnavail}}
	}
	got := disruptionBudgets(inv, "ns", ws, []policyv1.PodDisruptionBudget{
		pdb("min1", labels, &one, nil),
		pdb("max1", labels, nil, &one),
		pdb("maxall", labels, nil, &all),
		pdb("elsewhere", map[string]string{"app": "web"}, &one, nil),
	})
	want := "PodDisruptionBudget max1 selects the pods of StatefulSet/db|PodDisruptionBudget min1 selects the pods of StatefulSet/db"
	if strings.Join(got, "|") != want {
		t.Errorf("got %q", strings.Join(got, "|"))
	}
}

// TestClaimTemplateKeeps: the claim made again keeps what other controllers set on it, but an
// owner reference to a pod (the garbage collector would delete the new claim with the pod).
func TestClaimTemplateKeeps(t *testing.T) {
	yes := true
	vac := "fast-iops"
	source := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-db-0", Namespace: "ns",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db", UID: "s1", Controller: &yes}, {APIVersion: "v1", Kind: "Pod", Name: "db-0", UID: "p1"}},
		Finalizers:      []string{"kubernetes.io/pvc-protection", "example.com/backup"},
		Annotations:     map[string]string{"pv.kubernetes.io/bind-completed": "yes", "team": "db"},
	}, Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}}}
	class := "new"
	target := &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class, VolumeAttributesClassName: &vac}}
	raw, err := claimTemplate(source, target)
	if err != nil {
		t.Fatal(err)
	}
	var got corev1.PersistentVolumeClaim
	if err := json.Unmarshal([]byte(raw), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.OwnerReferences) != 1 || got.OwnerReferences[0].Kind != "StatefulSet" {
		t.Errorf("owner references: %+v", got.OwnerReferences)
	}
	if strings.Join(got.Finalizers, ",") != "kubernetes.io/pvc-protection,example.com/backup" {
		t.Errorf("finalizers: %v", got.Finalizers)
	}
	if got.Spec.VolumeAttributesClassName == nil || *got.Spec.VolumeAttributesClassName != vac || *got.Spec.StorageClassName != class {
		t.Errorf("spec: %+v", got.Spec)
	}
	if _, ok := got.Annotations["pv.kubernetes.io/bind-completed"]; ok || got.Annotations["team"] != "db" {
		t.Errorf("annotations: %v", got.Annotations)
	}
}

// TestCopyPodBaseline evaluates the copy pod with Pod Security Admission's own checks (the
// library the API server runs): a namespace that enforces "baseline" admits it.
func TestCopyPodBaseline(t *testing.T) {
	m := &Migrator{Spec: Spec{Namespace: "ns", Claim: "data", Image: "rsync:3"}}
	var err error
	if m.Spec.Resources.Requests, err = resourceList(quantities(defaultRequests), nil); err != nil {
		t.Fatal(err)
	}
	pod := m.copyPod("p", modeFinal, "MK", "data-migrating-1", "node-1", 60)
	evaluator, err := psapolicy.NewEvaluator(psapolicy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range evaluator.EvaluatePod(psaapi.LevelVersion{Level: psaapi.LevelBaseline, Version: psaapi.LatestVersion()}, &pod.ObjectMeta, &pod.Spec) {
		if !r.Allowed {
			t.Errorf("baseline refuses the copy pod: %s: %s", r.ForbiddenReason, r.ForbiddenDetail)
		}
	}
	if pod.Spec.Containers[0].Resources.Requests.Cpu().IsZero() {
		t.Errorf("no cpu request: %+v", pod.Spec.Containers[0].Resources)
	}
	// The check itself: the capability the copy pod had before is refused.
	pod.Spec.Containers[0].SecurityContext.Capabilities.Add = append(pod.Spec.Containers[0].SecurityContext.Capabilities.Add, "DAC_READ_SEARCH")
	refused := false
	for _, r := range evaluator.EvaluatePod(psaapi.LevelVersion{Level: psaapi.LevelBaseline, Version: psaapi.LatestVersion()}, &pod.ObjectMeta, &pod.Spec) {
		refused = refused || !r.Allowed
	}
	if !refused {
		t.Error("baseline admits DAC_READ_SEARCH: the evaluation checks nothing")
	}
}
