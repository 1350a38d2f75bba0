package helm

import (
	"fmt"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/releaseutil"
	"sigs.k8s.io/yaml"
)

// Object identifies one object of a rendered manifest.
type Object struct {
	APIVersion string
	Kind       string
	Name       string
	Namespace  string // empty for cluster-scoped objects or when the chart left it to the release namespace
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
	}
	return out, nil
}

func manifestIndex(key string) int {
	var n int
	if _, err := fmt.Sscanf(key, "manifest-%d", &n); err != nil {
		return 1 << 30
	}
	return n
}

// StorageClasses returns the names of the StorageClasses among objs.
func StorageClasses(objs []Object) []string {
	var out []string
	for _, o := range objs {
		if o.Kind == "StorageClass" && o.Group() == "storage.k8s.io" {
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
		if o.Group() != "apps" {
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
