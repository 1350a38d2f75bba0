package backend

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"sigs.k8s.io/yaml"
)

// releaseDriverSet is what a release's manifest says of the CSI drivers and provisioners it
// serves, by part of the release: the subchart each object comes from (the first charts/<name> of
// its "# Source:" path, so a subchart's own subcharts count as its part), "" for the chart's own
// templates and objects without a source.
type releaseDriverSet struct {
	backendType string
	// byPart holds each part's drivers, in manifest order; parts has every part with an object.
	byPart map[string][]string
	parts  map[string]bool
}

// releaseDrivers reads which drivers a release of backendType serves from its manifest: every
// CSIDriver object (storage.k8s.io) and the provisioner of every StorageClass (but
// kubernetes.io/no-provisioner), those a ConfigMap carries for an operator to create included
// (Longhorn's longhorn-storageclass), each under the part of the release it comes from. It is the
// one reading of a release's drivers both guards use: the destroy guard counts those of the whole
// release (all), the update guard those of the engines it turns off (ofEngines). The provider's
// table (backendDrivers, partFloor) is the floor under both, so a chart that brings a driver the
// table does not know (a newer engine, a renamed driver) is guarded too, and a manifest that
// cannot say (none yet) still guards the table's.
func releaseDrivers(backendType, manifest string) (releaseDriverSet, error) {
	set := releaseDriverSet{backendType: backendType, byPart: map[string][]string{}, parts: map[string]bool{}}
	for i, doc := range sortedDocs(manifest) {
		var o manifestObject
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			return releaseDriverSet{}, fmt.Errorf("parsing manifest document %d: %w", i, err)
		}
		if o.Kind == "" {
			continue // only comments
		}
		part := sourcePart(doc)
		set.parts[part] = true
		for _, d := range objectDrivers(o) {
			if d != noProvisioner && !slices.Contains(set.byPart[part], d) {
				set.byPart[part] = append(set.byPart[part], d)
			}
		}
	}
	return set, nil
}

// all is every driver of the release: the type's fixed list and every part's, sorted, each once.
func (s releaseDriverSet) all() []string {
	out := slices.Clone(backendDrivers[s.backendType])
	for _, ds := range s.byPart {
		out = append(out, ds...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ofEngines returns, for each subchart in gone (engines an update turns off or a chart version
// drops), the drivers whose volumes lose their driver with it: those its part of the manifest
// declares and the table's for it (partFloor), but for those a part of the release that stays
// declares too (Mayastor's etcd class names OpenEBS's hostpath provisioner, which
// localpv-provisioner keeps serving). Each list is sorted.
func (s releaseDriverSet) ofEngines(gone []string) map[string][]string {
	floor := partFloor[s.backendType]
	staying := map[string]bool{}
	for p := range s.parts {
		if slices.Contains(gone, p) {
			continue
		}
		for _, d := range s.byPart[p] {
			staying[d] = true
		}
		for _, d := range floor[p] {
			staying[d] = true
		}
	}
	out := map[string][]string{}
	for _, p := range gone {
		var ds []string
		for _, d := range append(slices.Clone(floor[p]), s.byPart[p]...) {
			if !staying[d] && !slices.Contains(ds, d) {
				ds = append(ds, d)
			}
		}
		slices.Sort(ds)
		out[p] = ds
	}
	return out
}

// partFloor is, per backend type, the drivers the provider's table knows each part of the
// release to install (a subchart's path; "" the chart's own templates): OpenEBS's engine
// subcharts (subchartDrivers) and its hostpath provisioner, Longhorn's own. Every one is in
// backendDrivers (TestSubchartDrivers).
var partFloor = func() map[string]map[string][]string {
	openebs := map[string][]string{"localpv-provisioner": {hostpathDriver}}
	for p, d := range subchartDrivers {
		openebs[p] = []string{d}
	}
	return map[string]map[string][]string{
		typeOpenEBS:  openebs,
		typeLonghorn: {"": {longhornDriver}},
	}
}()

// sourcePart is the part of the release a manifest document comes from, by the "# Source:"
// comment Helm writes above it (e.g. openebs/charts/mayastor/charts/etcd/templates/x.yaml is
// mayastor's): the first subchart of its path, "" for the chart's own templates or no comment.
func sourcePart(doc string) string {
	for _, line := range strings.Split(doc, "\n") {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, "# Source: "); ok {
			segs := strings.Split(rest, "/")
			if len(segs) > 2 && segs[1] == "charts" {
				return segs[2]
			}
			return ""
		}
		if line != "" && line != "---" && !strings.HasPrefix(line, "#") {
			return "" // the object began without a source
		}
	}
	return ""
}

// noProvisioner is the provisioner of classes whose volumes are made by hand (local volumes):
// a chart's class of it names no driver of the release.
const noProvisioner = "kubernetes.io/no-provisioner"

// manifestObject is what objectDrivers reads of one object of a manifest.
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

// objectDrivers returns the names of the CSIDriver objects and the StorageClass provisioners one
// manifest object is or holds (a List's items, a ConfigMap's embedded classes), in order, each once.
func objectDrivers(top manifestObject) []string {
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
	visit(top, false)
	return out
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
