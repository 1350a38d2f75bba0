package helm_test

import (
	"context"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	kubefake "helm.sh/helm/v3/pkg/kube/fake"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	storagev1 "k8s.io/api/storage/v1"
	"sigs.k8s.io/yaml"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/helm"
)

// render renders a fixture chart the way an install would, without a cluster.
func render(t *testing.T, dir string, values map[string]any) *release.Release {
	t.Helper()
	ch, err := loader.Load(filepath.Join(acctest.ChartsDir(), dir))
	if err != nil {
		t.Fatal(err)
	}
	cfg := &action.Configuration{
		Releases:     storage.Init(driver.NewMemory()),
		KubeClient:   &kubefake.PrintingKubeClient{Out: io.Discard},
		Capabilities: chartutil.DefaultCapabilities,
		Log:          t.Logf,
	}
	act := action.NewInstall(cfg)
	act.ReleaseName = "openebs"
	act.Namespace = "storage"
	act.DryRun = true
	act.ClientOnly = true
	act.IncludeCRDs = true
	act.KubeVersion = &chartutil.KubeVersion{Version: "v1.37.2", Major: "1", Minor: "37"}
	rel, err := act.RunWithContext(context.Background(), ch, values)
	if err != nil {
		t.Fatalf("rendering %s: %v", dir, err)
	}
	return rel
}

func objectsOf(t *testing.T, rel *release.Release) ([]helm.Object, []string) {
	t.Helper()
	objs, err := helm.ParseManifest(rel.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range objs {
		names = append(names, o.Kind+"/"+o.Name)
	}
	return objs, names
}

func storageClass(t *testing.T, manifest, name string) *storagev1.StorageClass {
	t.Helper()
	for _, doc := range strings.Split(manifest, "\n---") {
		if !strings.Contains(doc, "kind: StorageClass") {
			continue
		}
		var sc storagev1.StorageClass
		if err := yaml.Unmarshal([]byte(doc), &sc); err != nil {
			t.Fatal(err)
		}
		if sc.Name == name {
			return &sc
		}
	}
	t.Fatalf("no StorageClass %s in manifest", name)
	return nil
}

func TestFixtureOpenEBSLayouts(t *testing.T) {
	tests := []struct {
		dir          string
		mayastorOff  map[string]any
		lvmZfsOff    map[string]any
		addOns       []string
		basePathKeys map[string]any
	}{
		{
			dir:         "openebs-4.0.1",
			mayastorOff: map[string]any{"mayastor": map[string]any{"enabled": false}},
			lvmZfsOff:   map[string]any{"lvm-localpv": map[string]any{"enabled": false}, "zfs-localpv": map[string]any{"enabled": false}},
		},
		{
			dir:         "openebs-4.3.0",
			mayastorOff: map[string]any{"engines": map[string]any{"replicated": map[string]any{"mayastor": map[string]any{"enabled": false}}}},
			lvmZfsOff:   map[string]any{"engines": map[string]any{"local": map[string]any{"lvm": map[string]any{"enabled": false}, "zfs": map[string]any{"enabled": false}}}},
			addOns:      []string{"StatefulSet/openebs-loki", "DaemonSet/openebs-alloy"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.dir, func(t *testing.T) {
			rel := render(t, tt.dir, nil)
			objs, names := objectsOf(t, rel)
			for _, want := range append([]string{
				"Deployment/openebs-localpv-provisioner", "StorageClass/openebs-hostpath",
				"DaemonSet/openebs-io-engine", "StorageClass/mayastor-single-replica",
				"DaemonSet/openebs-lvm-localpv-node", "DaemonSet/openebs-zfs-localpv-node",
			}, tt.addOns...) {
				if !slices.Contains(names, want) {
					t.Errorf("defaults: %s missing from %q", want, names)
				}
			}
			if slices.Contains(names, "Deployment/openebs-fixture-never-ready") {
				t.Error("never-ready workload rendered by default")
			}
			if got := helm.StorageClasses(objs); !slices.Equal(got, []string{"mayastor-single-replica", "openebs-hostpath"}) && !slices.Equal(got, []string{"openebs-hostpath", "mayastor-single-replica"}) {
				t.Errorf("storage classes %q", got)
			}

			sc := storageClass(t, rel.Manifest, "openebs-hostpath")
			wantCfg := "- name: StorageType\n  value: \"hostpath\"\n- name: BasePath\n  value: \"/var/openebs/local\"\n"
			if got := sc.Annotations["cas.openebs.io/config"]; got != wantCfg {
				t.Errorf("cas.openebs.io/config =\n%s\nwant\n%s", got, wantCfg)
			}
			if sc.Provisioner != "openebs.io/local" {
				t.Errorf("provisioner %q", sc.Provisioner)
			}

			_, names = objectsOf(t, render(t, tt.dir, tt.mayastorOff))
			if slices.Contains(names, "DaemonSet/openebs-io-engine") || slices.Contains(names, "StorageClass/mayastor-single-replica") {
				t.Errorf("mayastor toggle off still renders mayastor: %q", names)
			}
			_, names = objectsOf(t, render(t, tt.dir, tt.lvmZfsOff))
			if slices.Contains(names, "DaemonSet/openebs-lvm-localpv-node") || slices.Contains(names, "DaemonSet/openebs-zfs-localpv-node") {
				t.Errorf("lvm/zfs toggles off still render them: %q", names)
			}

			rel = render(t, tt.dir, map[string]any{"localpv-provisioner": map[string]any{"hostpathClass": map[string]any{"basePath": "/data/openebs"}}, "fixture": map[string]any{"neverReady": true}})
			if got := storageClass(t, rel.Manifest, "openebs-hostpath").Annotations["cas.openebs.io/config"]; !strings.Contains(got, "value: \"/data/openebs\"") {
				t.Errorf("hostpathClass.basePath not rendered: %s", got)
			}
			if !strings.Contains(rel.Manifest, `"paths": ["/data/openebs"]`) {
				t.Error("the provisioner's config.json does not use the base path")
			}
			if _, names = objectsOf(t, rel); !slices.Contains(names, "Deployment/openebs-fixture-never-ready") {
				t.Error("fixture.neverReady does not render the never-ready Deployment")
			}
		})
	}
}

func TestFixtureLonghorn(t *testing.T) {
	for _, dir := range []string{"longhorn-1.7.2", "longhorn-1.8.1"} {
		t.Run(dir, func(t *testing.T) {
			rel := render(t, dir, map[string]any{
				"persistence":     map[string]any{"defaultClassReplicaCount": 1, "defaultDataLocality": "best-effort"},
				"defaultSettings": map[string]any{"defaultDataPath": "/data/longhorn", "defaultReplicaCount": 1},
			})
			_, names := objectsOf(t, rel)
			for _, want := range []string{"ConfigMap/longhorn-storageclass", "ConfigMap/longhorn-default-setting", "StorageClass/longhorn", "DaemonSet/longhorn-manager", "Deployment/longhorn-ui", "Setting/deleting-confirmation-flag"} {
				if !slices.Contains(names, want) {
					t.Errorf("%s missing from %q", want, names)
				}
			}
			sc := storageClass(t, rel.Manifest, "longhorn")
			if sc.Parameters["numberOfReplicas"] != "1" || sc.Parameters["dataLocality"] != "best-effort" || sc.Provisioner != "driver.longhorn.io" {
				t.Errorf("storage class %+v", sc)
			}
			for _, want := range []string{"default-data-path: /data/longhorn", "default-replica-count: 1", `value: "false"`} {
				if !strings.Contains(rel.Manifest, want) {
					t.Errorf("manifest lacks %q", want)
				}
			}
			if strings.Contains(rel.Manifest, "deleting-confirmation-flag: ") {
				t.Error("deleting-confirmation-flag is in the default settings although unset")
			}
			var hook *release.Hook
			for _, h := range rel.Hooks {
				if h.Name == "longhorn-uninstall" {
					hook = h
				}
			}
			if hook == nil || len(hook.Events) != 1 || hook.Events[0] != release.HookPreDelete {
				t.Fatalf("no pre-delete longhorn-uninstall hook: %+v", rel.Hooks)
			}

			rel = render(t, dir, map[string]any{"defaultSettings": map[string]any{"deletingConfirmationFlag": true}})
			if !strings.Contains(rel.Manifest, "deleting-confirmation-flag: true") || !strings.Contains(rel.Manifest, `value: "true"`) {
				t.Error("deletingConfirmationFlag=true not rendered into the settings")
			}
		})
	}
}
