package helm

import (
	"fmt"
	"sort"
	"strings"

	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"sigs.k8s.io/yaml"
)

// Object identifies one object of a rendered manifest.
type Object struct {
	APIVersion string
	Kind       string
	Name       string
	Namespace  string // empty for cluster-scoped objects or when the chart left it to the release namespace
	// EmbeddedIn names the ConfigMap ("ConfigMap/longhorn-storageclass")
	// whose data holds this object's manifest, for objects that an operator
	// creates from a ConfigMap rather than Helm itself (Longhorn's
	// StorageClass); empty for objects Helm applies.
	EmbeddedIn string
}

func (o Object) String() string {
	if o.Namespace == "" {
		return o.Kind + "/" + o.Name
	}
	return o.Kind + "/" + o.Namespace + "/" + o.Name
}

// Group returns the API group ("" for the core group).
func (o Object) Group() string {
	if i := strings.Index(o.APIVersion, "/"); i >= 0 {
		return o.APIVersion[:i]
	}
	return ""
}

// IsWorkload reports whether the object runs pods that Helm waits for.
func (o Object) IsWorkload() bool {
	switch o.Group() + "/" + o.Kind {
	case "apps/Deployment", "apps/DaemonSet", "apps/StatefulSet", "apps/ReplicaSet", "batch/Job", "/Pod":
		return true
	}
	return false
}

// ParseManifest splits a rendered multi-document manifest into its objects,
// in install order. Empty documents are skipped; a List is flattened.
func ParseManifest(manifest string) ([]Object, error) {
	docs := releaseutil.SplitManifests(manifest)
	keys := make([]string, 0, len(docs))
	for k := range docs {
		keys = append(keys, k)
	}
	// SplitManifests names documents manifest-0, manifest-1, ...
	sort.Slice(keys, func(i, j int) bool { return manifestIndex(keys[i]) < manifestIndex(keys[j]) })

	var out []Object
	for _, k := range keys {
		var doc struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
			Data  map[string]string `json:"data"`
			Items []struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
				Metadata   struct {
					Name      string `json:"name"`
					Namespace string `json:"namespace"`
				} `json:"metadata"`
			} `json:"items"`
		}
		if err := yaml.Unmarshal([]byte(docs[k]), &doc); err != nil {
			return nil, fmt.Errorf("parsing manifest document %d: %w", manifestIndex(k), err)
		}
		if doc.Kind == "" && doc.APIVersion == "" {
			continue
		}
		if strings.HasSuffix(doc.Kind, "List") && doc.Items != nil {
			for _, it := range doc.Items {
				out = append(out, Object{APIVersion: it.APIVersion, Kind: it.Kind, Name: it.Metadata.Name, Namespace: it.Metadata.Namespace})
			}
			continue
		}
		if doc.Kind == "" || doc.Metadata.Name == "" {
			return nil, fmt.Errorf("manifest document %d has no kind or metadata.name", manifestIndex(k))
		}
		out = append(out, Object{APIVersion: doc.APIVersion, Kind: doc.Kind, Name: doc.Metadata.Name, Namespace: doc.Metadata.Namespace})
		if doc.Kind == "ConfigMap" && doc.APIVersion == "v1" {
			out = append(out, embeddedStorageClasses(doc.Metadata.Name, doc.Data)...)
		}
	}
	return out, nil
}

// embeddedStorageClasses finds StorageClass manifests stored in a ConfigMap's
// data, the way Longhorn's chart ships its default class (ConfigMap
// longhorn-storageclass, key storageclass.yaml) for longhorn-manager to create.
func embeddedStorageClasses(configMap string, data map[string]string) []Object {
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []Object
	for _, k := range keys {
		if !strings.Contains(data[k], "StorageClass") {
			continue
		}
		for _, doc := range releaseutil.SplitManifests(data[k]) {
			var o struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
				Metadata   struct {
					Name string `json:"name"`
				} `json:"metadata"`
			}
			if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
				continue // not YAML: ordinary configuration text
			}
			if o.Kind == "StorageClass" && strings.HasPrefix(o.APIVersion, "storage.k8s.io/") && o.Metadata.Name != "" {
				out = append(out, Object{APIVersion: o.APIVersion, Kind: o.Kind, Name: o.Metadata.Name, EmbeddedIn: "ConfigMap/" + configMap})
			}
		}
	}
	return out
}

func manifestIndex(key string) int {
	var n int
	if _, err := fmt.Sscanf(key, "manifest-%d", &n); err != nil {
		return 1 << 30
	}
	return n
}

// StorageClasses returns the names of the StorageClasses among objs, those
// embedded in ConfigMaps included, each name once, in manifest order.
func StorageClasses(objs []Object) []string {
	var out []string
	seen := map[string]bool{}
	for _, o := range objs {
		if o.Kind == "StorageClass" && o.Group() == "storage.k8s.io" && !seen[o.Name] {
			seen[o.Name] = true
			out = append(out, o.Name)
		}
	}
	return out
}

// Workloads returns the Deployments, DaemonSets and StatefulSets among objs,
// with namespace defaulted to ns.
func Workloads(objs []Object, ns string) []Object {
	var out []Object
	for _, o := range objs {
		if o.Group() != "apps" || o.EmbeddedIn != "" {
			continue
		}
		switch o.Kind {
		case "Deployment", "DaemonSet", "StatefulSet":
			if o.Namespace == "" {
				o.Namespace = ns
			}
			out = append(out, o)
		}
	}
	return out
}

// ClaimTemplates maps each StatefulSet of a rendered manifest ("namespace/name", the namespace
// defaulted to ns) to the names of its volumeClaimTemplates: the StatefulSet controller names
// their claims <template>-<statefulset>-<ordinal> in the StatefulSet's namespace. StatefulSets
// without templates are left out.
func ClaimTemplates(manifest, ns string) (map[string][]string, error) {
	out := map[string][]string{}
	for k, doc := range releaseutil.SplitManifests(manifest) {
		var sts struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
			Spec struct {
				VolumeClaimTemplates []struct {
					Metadata struct {
						Name string `json:"name"`
					} `json:"metadata"`
				} `json:"volumeClaimTemplates"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal([]byte(doc), &sts); err != nil {
			return nil, fmt.Errorf("parsing manifest document %d: %w", manifestIndex(k), err)
		}
		if sts.Kind != "StatefulSet" || !strings.HasPrefix(sts.APIVersion, "apps/") || len(sts.Spec.VolumeClaimTemplates) == 0 {
			continue
		}
		namespace := sts.Metadata.Namespace
		if namespace == "" {
			namespace = ns
		}
		key := namespace + "/" + sts.Metadata.Name
		for _, t := range sts.Spec.VolumeClaimTemplates {
			out[key] = append(out[key], t.Metadata.Name)
		}
	}
	return out, nil
}
