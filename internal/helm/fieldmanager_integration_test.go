package helm_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	helmkube "helm.sh/helm/v4/pkg/kube"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/helm"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

// olderBuildManager is the field manager a registry install of an earlier build applied as
// (Helm took the binary's file name).
const olderBuildManager = "terraform-provider-clusterstorage_v0.0.1"

// webhook is fieldChart's ValidatingWebhookConfiguration, with a placeholder CA bundle that an
// injector replaces. It is never called: its rule names a resource no API serves, and it ignores
// failures.
const webhook = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: fm-{{ .Release.Namespace }}
webhooks:
  - name: v.clusterstorage.invalid
    admissionReviewVersions: ["v1"]
    sideEffects: None
    failurePolicy: Ignore
    clientConfig:
      caBundle: Cg==
      service: {name: fm, namespace: {{ .Release.Namespace }}}
    rules:
      - apiGroups: ["clusterstorage.invalid"]
        apiVersions: ["v1"]
        operations: ["CREATE"]
        resources: ["nothing"]
`

// fieldChart is a chart of one Deployment and one webhook configuration at version: 1.0.0 sets an
// annotation and an env var that 2.0.0 drops. It runs no pod (replicas 0, and no node would
// match), so a wait for it ends at once.
func fieldChart(version string) *chart.Chart {
	dropped := map[string]string{"1.0.0": `
    dropped-in-2: "x"`, "2.0.0": ""}[version]
	env := map[string]string{"1.0.0": `
            - name: DROPPED_IN_2
              value: "1"`, "2.0.0": ""}[version]
	deployment := fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: fm
  annotations:
    kept: "k"%s
spec:
  replicas: 0
  selector:
    matchLabels: {app: fm}
  template:
    metadata:
      labels: {app: fm}
    spec:
      nodeSelector: {clusterstorage.io/no-such-node: "true"}
      containers:
        - name: pause
          image: localhost/clusterstorage/pause:3.10
          imagePullPolicy: Never
          env:
            - name: KEPT
              value: "k"%s
`, dropped, env)
	return &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: "fm", Version: version},
		Templates: []*common.File{
			{Name: "templates/deployment.yaml", ModTime: time.Now(), Data: []byte(deployment)},
			{Name: "templates/webhook.yaml", ModTime: time.Now(), Data: []byte(webhook)},
		},
	}
}

// fieldRelease installs (or upgrades to) fieldChart(version) as release fm of k's namespace; the
// release is uninstalled at the end of the test.
func fieldRelease(t *testing.T, k *cluster, version string) helm.Release {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := k.c.Uninstall(ctx, "fm", k.ns, helm.UninstallOptions{Wait: true, Timeout: time.Minute, DisableHooks: true}); err != nil {
			t.Logf("cleanup: %v", err)
		}
	})
	return helm.Release{Name: "fm", Namespace: k.ns, CreateNamespace: true, Chart: fieldChart(version), Timeout: time.Minute}
}

// managers returns the field managers of d's object itself (no subresource) with the operation.
func managers(d *appsv1.Deployment) []string {
	var out []string
	for _, e := range d.ManagedFields {
		if e.Subresource == "" {
			out = append(out, e.Manager+" "+string(e.Operation))
		}
	}
	return out
}

// TestIntegrationUpgradeTakesOverFormerFieldManager: a release an earlier build installed (Helm
// applied as that build's binary name) is upgraded to a chart that drops an annotation and an env
// var; the upgrade takes the old manager's fields over first, so both are gone from the live
// Deployment, and so is the old manager's entry. Without the takeover both would stay, owned by
// the old manager, which no apply of the new one prunes.
func TestIntegrationUpgradeTakesOverFormerFieldManager(t *testing.T) {
	k := needCluster(t)
	ctx := context.Background()
	rel := fieldRelease(t, k, "1.0.0")
	func() {
		defer func(was string) { helmkube.ManagedFieldsManager = was }(helmkube.ManagedFieldsManager)
		helmkube.ManagedFieldsManager = olderBuildManager
		if _, err := k.c.Install(ctx, rel); err != nil {
			t.Fatal(err)
		}
	}()
	deployments := k.cs.AppsV1().Deployments(k.ns)
	d, err := deployments.Get(ctx, "fm", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m := managers(d); !slices.Contains(m, olderBuildManager+" Apply") {
		t.Fatalf("installed as an older build, the Deployment's managers are %q", m)
	}

	rel.Chart = fieldChart("2.0.0")
	st, err := k.c.Upgrade(ctx, rel)
	if err != nil {
		t.Fatal(err)
	}
	d, err = deployments.Get(ctx, "fm", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := d.Annotations["dropped-in-2"]; ok || d.Annotations["kept"] != "k" {
		t.Errorf("annotations after the upgrade: %v, want kept only", d.Annotations)
	}
	var env []string
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		env = append(env, e.Name)
	}
	if !slices.Equal(env, []string{"KEPT"}) {
		t.Errorf("env after the upgrade: %q, want [KEPT]", env)
	}
	if m := managers(d); slices.Contains(m, olderBuildManager+" Apply") || !slices.Contains(m, kube.FieldManager+" Apply") {
		t.Errorf("managers after the upgrade: %q, want %s and not %s", m, kube.FieldManager, olderBuildManager)
	}
	wantDrift(ctx, t, k.c, st)
}

// TestIntegrationScaledReplicasAreLeftToTheirManager: replicas written through /scale (as an
// autoscaler or `kubectl scale` writes them) and a webhook's CA bundle another manager injected
// are no drift, and an upgrade neither forces nor changes them, while a field the chart sets that
// someone edits is drift and taken back.
func TestIntegrationScaledReplicasAreLeftToTheirManager(t *testing.T) {
	k := needCluster(t)
	ctx := context.Background()
	rel := fieldRelease(t, k, "1.0.0")
	st, err := k.c.Install(ctx, rel)
	if err != nil {
		t.Fatal(err)
	}
	deployments := k.cs.AppsV1().Deployments(k.ns)
	if _, err := deployments.UpdateScale(ctx, "fm", &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{Name: "fm", Namespace: k.ns}, Spec: autoscalingv1.ScaleSpec{Replicas: 3},
	}, metav1.UpdateOptions{FieldManager: "autoscaler-test"}); err != nil {
		t.Fatal(err)
	}
	webhooks := k.cs.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	injected := []byte("injected CA")
	if _, err := webhooks.Patch(ctx, "fm-"+k.ns, types.StrategicMergePatchType,
		[]byte(fmt.Sprintf(`{"webhooks":[{"name":"v.clusterstorage.invalid","clientConfig":{"caBundle":%q}}]}`, base64.StdEncoding.EncodeToString(injected))),
		metav1.PatchOptions{FieldManager: "cainjector"}); err != nil {
		t.Fatal(err)
	}
	wantDrift(ctx, t, k.c, st)
	// As `kubectl edit` writes: a patch by its manager.
	if _, err := deployments.Patch(ctx, "fm", types.MergePatchType, []byte(`{"metadata":{"annotations":{"kept":"edited"}}}`),
		metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	wantDrift(ctx, t, k.c, st, "Deployment/"+k.ns+"/fm (metadata.annotations.kept)")

	rel.Chart = fieldChart("2.0.0")
	if st, err = k.c.Upgrade(ctx, rel); err != nil {
		t.Fatal(err)
	}
	d, err := deployments.Get(ctx, "fm", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 3 {
		t.Errorf("replicas after the upgrade: %v, want the autoscaler's 3", d.Spec.Replicas)
	}
	if d.Annotations["kept"] != "k" {
		t.Errorf("annotation kept after the upgrade: %q, want the chart's k", d.Annotations["kept"])
	}
	held := false
	for _, e := range d.ManagedFields {
		held = held || (e.Manager == "autoscaler-test" && e.Subresource == "scale")
	}
	if !held {
		t.Errorf("the autoscaler's /scale entry is gone after the upgrade: %v", d.ManagedFields)
	}
	w, err := webhooks.Get(ctx, "fm-"+k.ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := w.Webhooks[0].ClientConfig.CABundle; string(got) != string(injected) {
		t.Errorf("the webhook's CA bundle after the upgrade: %q, want the injected %q", got, injected)
	}
	if strings.Contains(st.Manifest, "replicas:") {
		t.Errorf("the upgrade applied replicas:\n%s", st.Manifest)
	}
	wantDrift(ctx, t, k.c, st)
}

// helmCLIInstall installs fieldChart(version) as release fm of k's namespace with the helm CLI
// of the provider's Helm version (tools/helm, built into bin/helm when missing), as a person
// does before adopting the release: Helm 4's CLI applies server-side as manager "helm".
func helmCLIInstall(t *testing.T, k *cluster, version string) {
	t.Helper()
	root := acctest.RepoRoot()
	build := exec.Command(filepath.Join(root, "tools", "build-tool.sh"), "helm")
	build.Env = append(os.Environ(), "ROOT="+root)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the helm CLI (tools/helm): %v\n%s", err, out)
	}
	_ = fieldRelease(t, k, version) // uninstalled at the end of the test
	dir := t.TempDir()
	if err := chartutil.SaveDir(fieldChart(version), dir); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "bin", "helm"), "install", "fm", filepath.Join(dir, "fm"),
		"--namespace", k.ns, "--create-namespace", "--kubeconfig", os.Getenv("KUBECONFIG"), "--wait", "--timeout", "1m")
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
}

// droppedFieldsAfterUpgrade upgrades release fm to fieldChart 2.0.0 through the provider's client
// (adopted or not) and returns the annotation and env var 1.0.0 set and 2.0.0 drops that are
// still on the live Deployment, and its managers.
func droppedFieldsAfterUpgrade(t *testing.T, k *cluster, adopted bool) (left, mgrs []string) {
	t.Helper()
	ctx := context.Background()
	rel := fieldRelease(t, k, "2.0.0")
	rel.Adopted = adopted
	if _, err := k.c.Upgrade(ctx, rel); err != nil {
		t.Fatal(err)
	}
	d, err := k.cs.AppsV1().Deployments(k.ns).Get(ctx, "fm", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := d.Annotations["dropped-in-2"]; ok {
		left = append(left, "annotation dropped-in-2")
	}
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		if e.Name == "DROPPED_IN_2" {
			left = append(left, "env DROPPED_IN_2")
		}
	}
	return left, managers(d)
}

// TestIntegrationAdoptionTakesOverHelmCLIFields: a release installed with the helm CLI (manager
// "helm") and adopted is upgraded, as the first upgrade after an import does (Release.Adopted),
// to a chart that drops an annotation and an env var: both are removed and the provider's manager
// owns what "helm" did. The same upgrade of a release the provider did not adopt leaves the
// helm CLI's fields to it: the dropped fields stay, still owned by "helm".
func TestIntegrationAdoptionTakesOverHelmCLIFields(t *testing.T) {
	for _, adopted := range []bool{true, false} {
		t.Run(fmt.Sprintf("adopted=%t", adopted), func(t *testing.T) {
			k := needCluster(t)
			helmCLIInstall(t, k, "1.0.0")
			d, err := k.cs.AppsV1().Deployments(k.ns).Get(context.Background(), "fm", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if m := managers(d); !slices.Equal(m, []string{helm.HelmCLIManager + " Apply"}) {
				t.Fatalf("after helm install the Deployment's managers are %q, want [helm Apply]", m)
			}
			left, mgrs := droppedFieldsAfterUpgrade(t, k, adopted)
			switch {
			case adopted && (len(left) > 0 || slices.Contains(mgrs, helm.HelmCLIManager+" Apply") || !slices.Contains(mgrs, kube.FieldManager+" Apply")):
				t.Errorf("after the adopting upgrade: left %q, managers %q; want nothing left, owned by %s", left, mgrs, kube.FieldManager)
			case !adopted && (len(left) != 2 || !slices.Contains(mgrs, helm.HelmCLIManager+" Apply")):
				t.Errorf("after an upgrade without adoption: left %q, managers %q; want both fields kept by helm", left, mgrs)
			}
		})
	}
}
