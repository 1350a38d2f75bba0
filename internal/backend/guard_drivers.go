package backend

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"sigs.k8s.io/yaml"
)

// releaseDrivers returns the CSI drivers and provisioners whose volumes a release of the backend
// type serves: the type's fixed list (backendDrivers) and what the release's own manifest
// installs, every CSIDriver object (storage.k8s.io) and the provisioner of every StorageClass
// (but kubernetes.io/no-provisioner), those a ConfigMap carries for an operator to create included
// (Longhorn's longhorn-storageclass).
// A chart that brings a driver the fixed list does not know (a newer engine, a renamed driver)
// is then guarded too. Sorted, each once.
func releaseDrivers(backendType, manifest string) ([]string, error) {
	out := slices.Clone(backendDrivers[backendType])
	found, err := manifestDrivers(manifest)
	if err != nil {
		return nil, err
	}
	for _, d := range found {
		if d == noProvisioner {
			continue // static volumes: no driver serves them, they outlive any backend
		}
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	sort.Strings(out)
	return out, nil
}

// noProvisioner is the provisioner of classes whose volumes are made by hand (local volumes):
// a chart's class of it names no driver of the release.
const noProvisioner = "kubernetes.io/no-provisioner"

// manifestObject is what manifestDrivers reads of one object of a manifest.
type manifestObject struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Provisioner string            `json:"provisioner"`
	Data        map[string]string `json:"data"`
	Items       []manifestObject  `json:"items"`
}

// manifestDrivers returns the names of the CSIDriver objects and the StorageClass provisioners of
// a rendered manifest, in manifest order, each once.
func manifestDrivers(manifest string) ([]string, error) {
	var out []string
	add := func(d string) {
		if d != "" && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	var visit func(o manifestObject, embedded bool)
	visit = func(o manifestObject, embedded bool) {
		group, _, _ := strings.Cut(o.APIVersion, "/")
		switch {
		case strings.HasSuffix(o.Kind, "List"):
			for _, it := range o.Items {
				visit(it, embedded)
			}
		case group == "storage.k8s.io" && o.Kind == "CSIDriver" && !embedded:
			add(o.Metadata.Name)
		case group == "storage.k8s.io" && o.Kind == "StorageClass":
			add(o.Provisioner)
		case o.Kind == "ConfigMap" && o.APIVersion == "v1" && !embedded:
			keys := make([]string, 0, len(o.Data))
			for k := range o.Data {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if !strings.Contains(o.Data[k], "StorageClass") {
					continue
				}
				for _, doc := range sortedDocs(o.Data[k]) {
					var e manifestObject
					if yaml.Unmarshal([]byte(doc), &e) == nil {
						visit(e, true) // not YAML: ordinary configuration text
					}
				}
			}
		}
	}
	for i, doc := range sortedDocs(manifest) {
		var o manifestObject
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			return nil, fmt.Errorf("parsing manifest document %d: %w", i, err)
		}
		visit(o, false)
	}
	return out, nil
}

// sortedDocs splits a multi-document manifest into its documents, in order.
func sortedDocs(manifest string) []string {
	docs := releaseutil.SplitManifests(manifest)
	keys := make([]string, 0, len(docs))
	for k := range docs {
		keys = append(keys, k)
	}
	index := func(k string) int {
		var n int
		if _, err := fmt.Sscanf(k, "manifest-%d", &n); err != nil {
			return 1 << 30
		}
		return n
	}
	sort.Slice(keys, func(i, j int) bool { return index(keys[i]) < index(keys[j]) })
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, docs[k])
	}
	return out
}
