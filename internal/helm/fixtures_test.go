package helm_test

import (
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	kubefake "helm.sh/helm/v4/pkg/kube/fake"
	release "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage"
	"helm.sh/helm/v4/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"sigs.k8s.io/yaml"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/helm"
)

// render renders one release of a fixture chart (the directory packaged as version) the way an
// install would, without a cluster.
func render(t *testing.T, dir, version string, values map[string]any) *release.Release {
	t.Helper()
	base, err := loader.Load(filepath.Join(acctest.ChartsDir(), dir))
	if err != nil {
		t.Fatal(err)
	}
	var ch *chart.Chart
	for _, c := range acctest.FixtureReleases(base) {
		if c.Metadata.Version == version {
			ch = c
		}
	}
	if ch == nil {
		t.Fatalf("fixture %s has no release %s", dir, version)
	}
	cfg := action.NewConfiguration()
	cfg.Releases = storage.Init(driver.NewMemory())
	cfg.KubeClient = &kubefake.PrintingKubeClient{Out: io.Discard, LogOutput: io.Discard}
	cfg.Capabilities = common.DefaultCapabilities
	act := action.NewInstall(cfg)
	act.ReleaseName = "openebs"
	act.Namespace = "storage"
	act.DryRunStrategy = action.DryRunClient
	act.IncludeCRDs = true
	act.KubeVersion = &common.KubeVersion{Version: "v1.37.2", Major: "1", Minor: "37"}
	rel, err := helm.AsRelease(act.RunWithContext(context.Background(), ch, values))
	if err != nil {
		t.Fatalf("rendering %s %s: %v", dir, version, err)
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

// provisionerConfig returns, from the localpv provisioner's config.json in manifest, the paths of
// each class it serves.
func provisionerConfig(t *testing.T, manifest string) map[string][]string {
	t.Helper()
	for _, doc := range strings.Split(manifest, "\n---") {
		var cm corev1.ConfigMap
		if !strings.Contains(doc, "kind: ConfigMap") || yaml.Unmarshal([]byte(doc), &cm) != nil || !strings.HasSuffix(cm.Name, "-localpv-provisioner-config") {
			continue
		}
		var cfg struct {
			StorageClassConfigs map[string]struct {
				NodePathMap []struct {
					Node  string   `json:"node"`
					Paths []string `json:"paths"`
				} `json:"nodePathMap"`
			} `json:"storageClassConfigs"`
		}
		if err := json.Unmarshal([]byte(cm.Data["config.json"]), &cfg); err != nil {
			t.Fatalf("the provisioner's config.json: %v", err)
		}
		out := map[string][]string{}
		for class, c := range cfg.StorageClassConfigs {
			for _, m := range c.NodePathMap {
				if m.Node == "DEFAULT_PATH_FOR_NON_LISTED_NODES" {
					out[class] = m.Paths
				}
			}
		}
		return out
	}
	t.Fatal("no localpv provisioner ConfigMap in the manifest")
	return nil
}

func hookNames(rel *release.Release) map[string][]release.HookEvent {
	out := map[string][]release.HookEvent{}
	for _, h := range rel.Hooks {
		out[h.Kind+"/"+h.Name] = h.Events
	}
	return out
}

func TestFixtureOpenEBS(t *testing.T) {
	off := map[string]any{"engines": map[string]any{
		"replicated": map[string]any{"mayastor": map[string]any{"enabled": false}},
		"local":      map[string]any{"lvm": map[string]any{"enabled": false}, "zfs": map[string]any{"enabled": false}},
	}}
	mayastor := []string{"DaemonSet/openebs-io-engine", "StorageClass/openebs-single-replica", "StatefulSet/openebs-etcd", "StorageClass/mayastor-etcd-localpv"}
	crds := []string{"CustomResourceDefinition/volumesnapshots.snapshot.storage.k8s.io", "CustomResourceDefinition/volumesnapshotclasses.snapshot.storage.k8s.io",
		"CustomResourceDefinition/volumesnapshotcontents.snapshot.storage.k8s.io"}
	tests := []struct {
		dir, version string
		logging      []string // rendered by default, with Mayastor or on their own
	}{
		{"openebs-4.0", "4.0.1", []string{"StatefulSet/openebs-loki", "DaemonSet/openebs-promtail", "StorageClass/mayastor-loki-localpv"}},
		{"openebs-4.0", "4.2.0", []string{"StatefulSet/openebs-loki", "DaemonSet/openebs-promtail", "StorageClass/mayastor-loki-localpv"}},
		{"openebs-4.4", "4.4.0", []string{"StatefulSet/openebs-loki", "StatefulSet/openebs-minio", "DaemonSet/openebs-alloy", "StorageClass/openebs-loki-localpv", "StorageClass/openebs-minio-localpv"}},
	}
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			rel := render(t, tt.dir, tt.version, nil)
			objs, names := objectsOf(t, rel)
			want := append([]string{"Deployment/openebs-localpv-provisioner", "StorageClass/openebs-hostpath",
				"DaemonSet/openebs-lvm-localpv-node", "DaemonSet/openebs-zfs-localpv-node"}, mayastor...)
			for _, w := range append(append(want, crds...), tt.logging...) {
				if !slices.Contains(names, w) {
					t.Errorf("defaults: %s missing from %q", w, names)
				}
			}
			for _, o := range objs {
				if o.Kind == "CustomResourceDefinition" && !strings.Contains(rel.Manifest, "helm.sh/resource-policy: keep") {
					t.Errorf("%s is not kept on uninstall", o.Name)
				}
			}
			if slices.Contains(names, "Deployment/openebs-fixture-never-ready") || slices.Contains(names, "DaemonSet/openebs-rawfile-localpv-node") {
				t.Errorf("rendered by default: %q", names)
			}
			if ev := hookNames(rel)["Job/openebs-pre-upgrade-hook"]; len(ev) != 1 || ev[0] != release.HookPreUpgrade {
				t.Errorf("pre-upgrade hook: %v", hookNames(rel))
			}
			if !strings.Contains(rel.Manifest, "openebs.io/engine: mayastor") {
				t.Error("io-engine is not limited to nodes labelled openebs.io/engine=mayastor")
			}
			if !strings.Contains(rel.Manifest, "requiredDuringSchedulingIgnoredDuringExecution") || !strings.Contains(rel.Manifest, "replicas: 3") {
				t.Error("etcd: not 3 replicas with a hard anti-affinity")
			}

			sc := storageClass(t, rel.Manifest, "openebs-hostpath")
			wantCfg := "- name: StorageType\n  value: \"hostpath\"\n- name: BasePath\n  value: \"/var/openebs/local\"\n"
			if got := sc.Annotations["cas.openebs.io/config"]; got != wantCfg || sc.Provisioner != "openebs.io/local" {
				t.Errorf("hostpath class %s: cas.openebs.io/config =\n%s\nwant\n%s", sc.Provisioner, got, wantCfg)
			}

			// Every engine off: no Mayastor, LVM or ZFS object (and, before 4.4, no loki-stack).
			_, names = objectsOf(t, render(t, tt.dir, tt.version, off))
			for _, n := range names {
				if strings.Contains(n, "io-engine") || strings.Contains(n, "etcd") || strings.Contains(n, "lvm") || strings.Contains(n, "zfs") ||
					strings.Contains(n, "single-replica") || (tt.version != "4.4.0" && strings.Contains(n, "loki")) {
					t.Errorf("every engine off still renders %s", n)
				}
			}

			rel = render(t, tt.dir, tt.version, map[string]any{"localpv-provisioner": map[string]any{"hostpathClass": map[string]any{"basePath": "/data/openebs"}},
				"openebs-crds": map[string]any{"csi": map[string]any{"volumeSnapshots": map[string]any{"enabled": false}}}, "fixture": map[string]any{"neverReady": true}})
			if got := storageClass(t, rel.Manifest, "openebs-hostpath").Annotations["cas.openebs.io/config"]; !strings.Contains(got, "value: \"/data/openebs\"") {
				t.Errorf("hostpathClass.basePath not rendered: %s", got)
			}
			// Every openebs.io/local class of the release, and only those, provisions under the base
			// path (another release's provisioner, also openebs.io/local, must refuse them).
			cfg := provisionerConfig(t, rel.Manifest)
			var local []string
			for _, doc := range strings.Split(rel.Manifest, "\n---") {
				var sc storagev1.StorageClass
				if strings.Contains(doc, "kind: StorageClass") && yaml.Unmarshal([]byte(doc), &sc) == nil && sc.Provisioner == "openebs.io/local" {
					local = append(local, sc.Name)
					if !slices.Equal(cfg[sc.Name], []string{"/data/openebs"}) {
						t.Errorf("the provisioner's config.json gives class %s the paths %q, want the base path", sc.Name, cfg[sc.Name])
					}
				}
			}
			if len(local) == 0 {
				t.Error("no openebs.io/local class rendered")
			}
			_, names = objectsOf(t, rel)
			if !slices.Contains(names, "Deployment/openebs-fixture-never-ready") {
				t.Error("fixture.neverReady does not render the never-ready Deployment")
			}
			if slices.Contains(names, crds[0]) {
				t.Error("openebs-crds.csi.volumeSnapshots.enabled=false still renders the CRDs")
			}
		})
	}
}

func TestFixtureLonghorn(t *testing.T) {
	for _, version := range []string{"1.7.3", "1.8.2", "1.10.2", "1.12.1"} {
		t.Run(version, func(t *testing.T) {
			rel := render(t, "longhorn", version, map[string]any{
				"persistence":     map[string]any{"defaultClassReplicaCount": 1, "defaultDataLocality": "best-effort"},
				"defaultSettings": map[string]any{"defaultDataPath": "/data/longhorn", "defaultReplicaCount": 1},
			})
			objs, names := objectsOf(t, rel)
			for _, want := range []string{"ConfigMap/longhorn-storageclass", "ConfigMap/longhorn-default-setting", "DaemonSet/longhorn-manager",
				"Deployment/longhorn-ui", "CustomResourceDefinition/settings.longhorn.io", "CustomResourceDefinition/volumes.longhorn.io"} {
				if !slices.Contains(names, want) {
					t.Errorf("%s missing from %q", want, names)
				}
			}
			for _, o := range objs {
				if o.Kind == "StorageClass" && o.EmbeddedIn == "" {
					t.Errorf("class %s is part of the release; longhorn-manager makes it (a hook in the fixture)", o.Name)
				}
			}
			hooks := hookNames(rel)
			for name, want := range map[string]release.HookEvent{
				"Job/longhorn-uninstall": release.HookPreDelete, "Job/longhorn-pre-upgrade": release.HookPreUpgrade, "StorageClass/longhorn": release.HookPostInstall,
			} {
				if ev := hooks[name]; len(ev) == 0 || ev[0] != want {
					t.Errorf("hook %s: %v, want %s", name, ev, want)
				}
			}
			sc := storageClass(t, rel.Manifest+"\n---\n"+hookManifest(rel, "longhorn"), "longhorn")
			if sc.Parameters["numberOfReplicas"] != "1" || sc.Parameters["dataLocality"] != "best-effort" || sc.Provisioner != "driver.longhorn.io" {
				t.Errorf("storage class %+v", sc)
			}
			quoted := semver.MustParse(version).Minor() >= 10
			for _, want := range []string{"default-data-path: /data/longhorn", "default-replica-count: 1"} {
				if quoted {
					k, v, _ := strings.Cut(want, ": ")
					want = k + `: "` + v + `"`
				}
				if !strings.Contains(rel.Manifest, want) {
					t.Errorf("manifest lacks %q", want)
				}
			}
			if strings.Contains(rel.Manifest, "deleting-confirmation-flag: ") {
				t.Error("deleting-confirmation-flag is in the default settings although unset")
			}
			rel = render(t, "longhorn", version, map[string]any{"defaultSettings": map[string]any{"deletingConfirmationFlag": "true"}})
			if !strings.Contains(rel.Manifest, "deleting-confirmation-flag: ") {
				t.Error("deletingConfirmationFlag=true not rendered into the settings")
			}
		})
	}
}

func hookManifest(rel *release.Release, name string) string {
	for _, h := range rel.Hooks {
		if h.Name == name {
			return h.Manifest
		}
	}
	return ""
}
