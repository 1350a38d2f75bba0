package helm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
	helmkube "helm.sh/helm/v4/pkg/kube"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/kustomize/kyaml/kio"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// HelmCLIManager is the field manager of the Helm CLI's applies (the binary's name): a release
// installed with `helm` and then adopted has its fields owned by it until the first upgrade after
// the adoption takes them over (Release.Adopted).
const HelmCLIManager = "helm"

var fieldManagerOnce sync.Once

// useFieldManager makes Helm apply as kube.FieldManager. Helm keeps its manager in a
// process-wide variable (helmkube.ManagedFieldsManager) and, while it is empty, takes the
// binary's file name, which a registry install names after the provider's version.
func useFieldManager() {
	fieldManagerOnce.Do(func() { helmkube.ManagedFieldsManager = kube.FieldManager })
}

// formerManager reports whether the provider takes the fields of manager over at every
// upgrade: the managers of earlier builds (terraform-provider-clusterstorage_vX.Y.Z, or any other
// name of the provider's binary). The Helm CLI's is taken over only on adoption (adoptedManager).
func formerManager(manager string) bool {
	return manager != kube.FieldManager && strings.HasPrefix(manager, kube.FieldManager)
}

// adoptedManager reports whether the first upgrade after an adoption (an import of a release
// installed with the helm CLI) takes the fields of manager over: the Helm CLI's, whose entries a
// server-side `helm install` leaves as Apply and a client-side one (Helm 3, `--server-side=false`)
// as Update. Helm does the same for its own client-side entries when it moves a release to
// server-side apply (csaupgrade). Outside an adoption the CLI's fields stay its own: someone who
// keeps running helm on a release the provider also upgrades keeps what helm set.
func adoptedManager(manager string) bool {
	return manager == HelmCLIManager
}

// takeOverFields merges the Apply entries of the former managers (formerManager) on the objects
// of manifest into kube.FieldManager's, once per object, and with adopt also the Helm CLI's Apply
// and Update entries (adoptedManager), so that the next server-side apply
// removes what a newer chart no longer sets: a field still owned by an old manager would stay.
// It does what k8s.io/client-go/util/csaupgrade does for client-side apply's Update entries,
// for Apply entries (which that package leaves alone). Each object is written with a JSON patch
// of metadata.managedFields guarded by its resourceVersion, retried on a conflict. It returns
// what it took over, as "Deployment/ns/name from terraform-provider-clusterstorage_v0.0.1".
func takeOverFields(ctx context.Context, infos []*resource.Info, adopt bool) ([]string, error) {
	var taken []string
	for _, info := range infos {
		if err := ctx.Err(); err != nil {
			return taken, err
		}
		h := resource.NewHelper(info.Client, info.Mapping).WithFieldManager(kube.FieldManager)
		var from []string
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			live, err := h.Get(info.Namespace, info.Name)
			if apierrors.IsNotFound(err) {
				return nil
			}
			if err != nil {
				return err
			}
			var patch []byte
			patch, from, err = takeOverPatch(live, adopt)
			if err != nil || patch == nil {
				return err
			}
			_, err = h.Patch(info.Namespace, info.Name, types.JSONPatchType, patch, &metav1.PatchOptions{})
			return err
		})
		if err != nil {
			return taken, fmt.Errorf("taking over the fields of %s from the provider's former field managers: %w", infoName(info), err)
		}
		if len(from) > 0 {
			taken = append(taken, infoName(info)+" from "+strings.Join(from, ", "))
		}
	}
	return taken, nil
}

// takeOverPatch returns the JSON patch that gives obj's former managers' Apply entries (and with
// adopt the Helm CLI's entries) to kube.FieldManager, and their names; nil when there are none.
func takeOverPatch(obj runtime.Object, adopt bool) ([]byte, []string, error) {
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return nil, nil, err
	}
	entries, from, err := takeOverEntries(accessor.GetManagedFields(), adopt)
	if err != nil || len(from) == 0 {
		return nil, nil, err
	}
	patch, err := json.Marshal([]map[string]any{
		{"op": "replace", "path": "/metadata/managedFields", "value": entries},
		// "replace" rather than "test", as csaupgrade does: a changed object is then a 409
		// conflict (retried), not an invalid request.
		{"op": "replace", "path": "/metadata/resourceVersion", "value": accessor.GetResourceVersion()},
	})
	return patch, from, err
}

// takeOverEntries returns entries with the former managers' Apply entries of the object itself
// (not of a subresource) merged into kube.FieldManager's (the union of their field sets), and
// the managers merged; with adopt, the Helm CLI's entries of the object itself, Apply or Update,
// too. Without an Apply entry of kube.FieldManager, the most recent taken one (managedFields are
// kept most recent first) becomes it, as an Apply entry.
func takeOverEntries(entries []metav1.ManagedFieldsEntry, adopt bool) ([]metav1.ManagedFieldsEntry, []string, error) {
	apply := func(e metav1.ManagedFieldsEntry) bool {
		return e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == ""
	}
	taken := func(e metav1.ManagedFieldsEntry) bool {
		if e.Subresource != "" {
			return false
		}
		if adopt && adoptedManager(e.Manager) {
			return e.Operation == metav1.ManagedFieldsOperationApply || e.Operation == metav1.ManagedFieldsOperationUpdate
		}
		return apply(e) && formerManager(e.Manager)
	}
	target := slices.IndexFunc(entries, func(e metav1.ManagedFieldsEntry) bool { return apply(e) && e.Manager == kube.FieldManager })
	var former []int
	for i, e := range entries {
		if taken(e) {
			former = append(former, i)
		}
	}
	if len(former) == 0 {
		return entries, nil, nil
	}
	if target < 0 {
		target = former[0]
	}
	union := &fieldpath.Set{}
	var from []string
	for _, i := range append([]int{target}, former...) {
		var s fieldpath.Set
		if entries[i].FieldsV1 != nil {
			if err := s.FromJSON(entries[i].FieldsV1.GetRawReader()); err != nil {
				return nil, nil, fmt.Errorf("reading the fields of manager %q: %w", entries[i].Manager, err)
			}
		}
		union = union.Union(&s)
		if entries[i].Manager != kube.FieldManager && !slices.Contains(from, entries[i].Manager) {
			from = append(from, entries[i].Manager)
		}
	}
	raw, err := union.ToJSON()
	if err != nil {
		return nil, nil, err
	}
	merged := *entries[target].DeepCopy()
	merged.Manager = kube.FieldManager
	merged.Operation = metav1.ManagedFieldsOperationApply
	merged.FieldsV1 = metav1.NewFieldsV1(string(raw))
	out := make([]metav1.ManagedFieldsEntry, 0, len(entries))
	for i, e := range entries {
		switch {
		case i == target:
			out = append(out, merged)
		case !slices.Contains(former, i):
			out = append(out, e)
		}
	}
	sort.Strings(from)
	return out, from, nil
}

// heldByOthers returns the fields of obj that are another manager's to keep, which the provider
// neither applies nor counts as drift:
//   - those a manager other than kube.FieldManager last wrote through a subresource (/scale: a
//     HorizontalPodAutoscaler, `kubectl scale`; /status);
//   - a CA bundle (a field named caBundle: a webhook's, a CRD's conversion webhook's, an
//     APIService's) that another manager injected (cert-manager's cainjector, an operator), the
//     provider's former managers and the helm CLI (which applies the chart's own) excepted.
//
// A path is a list of field names and, for an element of a list keyed by one field, "[key=value]"
// (kyaml's syntax), e.g. ["webhooks", "[name=validate.example.com]", "clientConfig", "caBundle"];
// paths through other lists are left out.
func heldByOthers(obj metav1.Object) ([][]string, error) {
	var out [][]string
	for _, e := range obj.GetManagedFields() {
		if e.Manager == kube.FieldManager || e.FieldsV1 == nil || (e.Subresource == "" && (formerManager(e.Manager) || adoptedManager(e.Manager))) {
			continue
		}
		var s fieldpath.Set
		if err := s.FromJSON(e.FieldsV1.GetRawReader()); err != nil {
			return nil, fmt.Errorf("reading the fields of manager %q: %w", e.Manager, err)
		}
		s.Leaves().Iterate(func(p fieldpath.Path) {
			steps := pathSteps(p)
			if len(steps) == 0 || strings.HasPrefix(steps[len(steps)-1], "[") {
				return
			}
			if e.Subresource != "" || steps[len(steps)-1] == "caBundle" {
				out = append(out, steps)
			}
		})
	}
	return out, nil
}

// pathSteps writes p as heldByOthers's steps; nil when it goes through a list that is not keyed
// by one string field.
func pathSteps(p fieldpath.Path) []string {
	steps := make([]string, 0, len(p))
	for _, pe := range p {
		switch {
		case pe.FieldName != nil:
			steps = append(steps, *pe.FieldName)
		case pe.Key != nil && len(*pe.Key) == 1 && (*pe.Key)[0].Value.IsString():
			k := (*pe.Key)[0]
			steps = append(steps, "["+k.Name+"="+k.Value.AsString()+"]")
		default:
			return nil
		}
	}
	return steps
}

// withoutHeld removes paths (heldByOthers's) from obj in place and returns the dotted names of
// those it had.
func withoutHeld(obj map[string]any, paths [][]string) []string {
	var removed []string
	for _, p := range paths {
		parent, ok := walk(obj, p[:len(p)-1])
		if _, has := parent[p[len(p)-1]]; ok && has {
			delete(parent, p[len(p)-1])
			removed = append(removed, strings.Join(p, "."))
		}
	}
	return removed
}

// walk follows steps from m to the map they lead to.
func walk(m map[string]any, steps []string) (map[string]any, bool) {
	var cur any = m
	for _, step := range steps {
		if key, value, ok := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(step, "["), "]"), "="); ok && strings.HasPrefix(step, "[") {
			list, _ := cur.([]any)
			cur = nil
			for _, el := range list {
				if em, ok := el.(map[string]any); ok && em[key] == value {
					cur = em
					break
				}
			}
			continue
		}
		cm, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		cur = cm[step]
	}
	out, ok := cur.(map[string]any)
	return out, ok
}

// objectKey names an object in a manifest: API group, kind, namespace ("" for a cluster-scoped
// object) and name.
type objectKey struct{ group, kind, namespace, name string }

// heldFields returns, for each object of infos that has any, the fields that are another
// manager's (heldByOthers).
func heldFields(ctx context.Context, infos []*resource.Info) (map[objectKey][][]string, error) {
	out := map[objectKey][][]string{}
	for _, info := range infos {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		live, err := resource.NewHelper(info.Client, info.Mapping).Get(info.Namespace, info.Name)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", infoName(info), err)
		}
		accessor, err := meta.Accessor(live)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", infoName(info), err)
		}
		paths, err := heldByOthers(accessor)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", infoName(info), err)
		}
		if len(paths) > 0 {
			gvk := info.Mapping.GroupVersionKind
			out[objectKey{gvk.Group, gvk.Kind, info.Namespace, info.Name}] = paths
		}
	}
	return out, nil
}

// leaveHeldFields is a Helm post-renderer that removes, from the rendered objects, the fields
// that are another manager's on the live ones (heldByOthers), so an upgrade neither forces nor
// changes them (a chart's replicas under an autoscaler, an injected CA bundle). namespace is the release's, which Helm gives the
// objects that name none.
type leaveHeldFields struct {
	held      map[objectKey][][]string
	namespace string
	log       Logf
}

func (p leaveHeldFields) Run(rendered *bytes.Buffer) (*bytes.Buffer, error) {
	if len(p.held) == 0 {
		return rendered, nil
	}
	nodes, err := kio.ParseAll(rendered.String())
	if err != nil {
		return nil, fmt.Errorf("reading the rendered manifest: %w", err)
	}
	for _, n := range nodes {
		group := ""
		if g, _, ok := strings.Cut(n.GetApiVersion(), "/"); ok {
			group = g
		}
		key := objectKey{group, n.GetKind(), n.GetNamespace(), n.GetName()}
		paths, ok := p.held[key]
		if !ok && key.namespace == "" {
			key.namespace = p.namespace
			paths, ok = p.held[key]
		}
		if !ok {
			continue
		}
		for _, path := range paths {
			parent, err := n.Pipe(kyaml.Lookup(path[:len(path)-1]...))
			if err != nil || parent == nil {
				continue
			}
			if cleared, err := parent.Pipe(kyaml.Clear(path[len(path)-1])); err == nil && cleared != nil {
				p.log("leaving %s of %s/%s to the manager that holds it", strings.Join(path, "."), key.kind, key.name)
			}
		}
	}
	out, err := kio.StringAll(nodes)
	if err != nil {
		return nil, fmt.Errorf("writing the rendered manifest: %w", err)
	}
	return bytes.NewBufferString(out), nil
}
