package helm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/resource"
)

// maxDriftPaths bounds the field paths ObjectDrift names per object.
const maxDriftPaths = 3

// ObjectDrift lists the objects of a release that are no longer what its manifest made them: one
// that is missing, or one with a field the manifest sets changed since (kubectl edit, kubectl
// patch, another tool), with the first paths that differ, e.g.
// "Deployment/openebs/openebs-localpv-provisioner (metadata.labels.tier)". It asks the API server
// what an upgrade would change: a server-side apply, dry run, by the provider's field manager
// (kube.FieldManager), forced as an upgrade forces. So the server's defaults and formats, and
// fields the chart leaves to others (a Service's clusterIP, a controller's annotations), never
// count; a field the chart sets that someone changed does, as an upgrade takes it back; a field
// that is another manager's (an autoscaler's replicas written through /scale, /status, an
// injected CA bundle: heldByOthers) is neither applied by an upgrade nor counted. An upgrade of
// the release puts everything listed back.
//
// Objects that cannot be checked (the credentials may not patch them, an admission webhook
// refuses dry runs) do not stop the others: their failures come back as a *DriftCheckError beside
// the drift of the rest.
func (c *Client) ObjectDrift(ctx context.Context, st *Status) ([]string, error) {
	drift, _, err := c.ObjectDriftCached(ctx, st, nil)
	return drift, err
}

// DriftCache is what one drift check learned, for the next: the manifest it checked and, per
// object, the resourceVersion it saw and what it found there. An object whose resourceVersion is
// unchanged since is the same object (every write, by anyone, changes it), so its dry run would
// answer the same and is skipped.
type DriftCache struct {
	// Format is driftCacheFormat; a cache of another format is not used.
	Format int `json:"format"`
	// Manifest is the SHA-256 of the manifest checked: another revision's cache is not used.
	Manifest string `json:"manifest"`
	// Objects are keyed by "Kind/namespace/name" (infoName).
	Objects map[string]CachedDrift `json:"objects"`
}

// CachedDrift is one object's drift at one resourceVersion.
type CachedDrift struct {
	ResourceVersion string   `json:"rv"`
	Paths           []string `json:"paths,omitempty"`
}

// driftCacheFormat changes whenever what a dry run's result means changes (heldByOthers, the
// marks added): caches written before are then thrown away.
const driftCacheFormat = 1

// maxDriftParallel bounds the objects checked at once (one GET and at most a few dry runs each).
// A variable only so the benchmark can measure one at a time, as the check was before.
var maxDriftParallel = 8

// ObjectDriftCached is ObjectDrift with the cache of the previous check (nil for none): objects
// are read in parallel (at most maxDriftParallel at once), and only those whose resourceVersion
// changed since prev (or that prev does not have) are dry-run. It returns the drift, the cache
// for the next check (objects that are missing or could not be checked are not in it), and the
// error as ObjectDrift does.
func (c *Client) ObjectDriftCached(ctx context.Context, st *Status, prev *DriftCache) ([]string, *DriftCache, error) {
	cfg, err := c.actionConfig(st.Namespace)
	if err != nil {
		return nil, nil, err
	}
	infos, err := cfg.KubeClient.Build(strings.NewReader(st.Manifest), false)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the manifest of release %s/%s: %w", st.Namespace, st.Name, err)
	}
	sum := sha256.Sum256([]byte(st.Manifest))
	next := &DriftCache{Format: driftCacheFormat, Manifest: hex.EncodeToString(sum[:]), Objects: map[string]CachedDrift{}}
	if prev != nil && (prev.Format != next.Format || prev.Manifest != next.Manifest) {
		prev = nil
	}
	type result struct {
		paths []string
		rv    string
		err   error
	}
	results := make([]result, len(infos))
	sem := make(chan struct{}, maxDriftParallel)
	var wg sync.WaitGroup
	for i, info := range infos {
		var cached *CachedDrift
		if prev != nil {
			if cd, ok := prev.Objects[infoName(info)]; ok {
				cached = &cd
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				results[i].err = ctx.Err()
				return
			}
			defer func() { <-sem }()
			paths, rv, err := objectDrift(ctx, info, st.Name, st.Namespace, cached)
			results[i] = result{paths: paths, rv: rv, err: err}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	var drift []string
	var failed []ObjectCheckFailure
	for i, info := range infos {
		r := results[i]
		if errors.Is(r.err, context.Canceled) || errors.Is(r.err, context.DeadlineExceeded) {
			return nil, nil, r.err
		}
		if r.err != nil {
			failed = append(failed, ObjectCheckFailure{Object: infoName(info), Resource: info.Mapping.Resource.GroupResource().String(), Namespace: info.Namespace, Err: r.err})
			continue
		}
		if r.rv != "" {
			next.Objects[infoName(info)] = CachedDrift{ResourceVersion: r.rv, Paths: r.paths}
		}
		if r.paths != nil {
			drift = append(drift, fmt.Sprintf("%s (%s)", infoName(info), strings.Join(r.paths, ", ")))
		}
	}
	if len(failed) > 0 {
		return drift, next, &DriftCheckError{Failures: failed}
	}
	return drift, next, nil
}

// ObjectCheckFailure is an object whose drift could not be checked.
type ObjectCheckFailure struct {
	// Object is "Kind/namespace/name" (or "Kind/name"), Resource "deployments.apps" and
	// Namespace its namespace ("" for a cluster-scoped one).
	Object, Resource, Namespace string
	Err                         error
}

// Why says what failed and what the user can do about it.
func (f ObjectCheckFailure) Why() string {
	where := "cluster-wide"
	if f.Namespace != "" {
		where = "in namespace " + f.Namespace
	}
	switch {
	case apierrors.IsForbidden(f.Err):
		return fmt.Sprintf("%s: the provider's credentials may not read or dry-run patch it (%v); the drift check needs get and patch on %s %s "+
			"(a server-side dry run is authorized as a patch)", f.Object, f.Err, f.Resource, where)
	case strings.Contains(f.Err.Error(), "does not support dry run"):
		return fmt.Sprintf("%s: an admission webhook refuses dry runs (%v); a webhook whose sideEffects are None or NoneOnDryRun lets it be checked", f.Object, f.Err)
	default:
		return fmt.Sprintf("%s: %v", f.Object, f.Err)
	}
}

// DriftCheckError says which objects of a release ObjectDrift could not check.
type DriftCheckError struct{ Failures []ObjectCheckFailure }

func (e *DriftCheckError) Error() string {
	why := make([]string, 0, len(e.Failures))
	for _, f := range e.Failures {
		why = append(why, f.Why())
	}
	return fmt.Sprintf("%d object(s) could not be checked for drift: %s", len(e.Failures), strings.Join(why, "; "))
}

// objectDrift returns what applying info's object of release name in namespace would change on the
// live one, nil for nothing, and the resourceVersion of the live object that answer holds for
// ("" when the object is missing). When cached holds the answer at the live resourceVersion, no
// dry run is made. A dry run answers with the resourceVersion of the object it applied to: when
// that is not the one read before (a controller wrote in between, e.g. a Deployment's revision
// annotation), the object is read and the dry run made again.
func objectDrift(ctx context.Context, info *resource.Info, name, namespace string, cached *CachedDrift) ([]string, string, error) {
	h := resource.NewHelper(info.Client, info.Mapping).WithFieldManager(kube.FieldManager).DryRun(true)
	for attempt := 1; ; attempt++ {
		live, err := h.Get(info.Namespace, info.Name)
		if apierrors.IsNotFound(err) {
			return []string{"missing"}, "", nil
		}
		if err != nil {
			return nil, "", fmt.Errorf("reading %s: %w", infoName(info), err)
		}
		was, ok := live.(*unstructured.Unstructured)
		if !ok {
			return nil, "", fmt.Errorf("%s: the API server answered with an object of type %T", infoName(info), live)
		}
		if cached != nil && cached.ResourceVersion != "" && cached.ResourceVersion == was.GetResourceVersion() {
			return cached.Paths, cached.ResourceVersion, nil
		}
		is, err := dryRunApply(ctx, h, info, was, name, namespace)
		if err != nil {
			return nil, "", err
		}
		if is.GetResourceVersion() != was.GetResourceVersion() && attempt < maxDriftAttempts {
			continue
		}
		return diffPaths("", withoutWriteFields(was), withoutWriteFields(is), nil), was.GetResourceVersion(), nil
	}
}

// maxDriftAttempts bounds how often objectDrift reads an object that keeps changing.
const maxDriftAttempts = 3

// dryRunApply returns what applying info's object over live would make of it: a server-side
// apply, dry run, forced, without the fields that are another manager's (heldByOthers).
func dryRunApply(ctx context.Context, h *resource.Helper, info *resource.Info, live *unstructured.Unstructured, name, namespace string) (*unstructured.Unstructured, error) {
	obj, ok := info.Object.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("%s: the manifest gave an object of type %T", infoName(info), info.Object)
	}
	obj = markedAsHelms(obj, name, namespace)
	held, err := heldByOthers(live)
	if err != nil {
		return nil, err
	}
	withoutHeld(obj.Object, held)
	data, err := runtime.Encode(unstructured.UnstructuredJSONScheme, obj)
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", infoName(info), err)
	}
	force := true
	applied, err := h.Patch(info.Namespace, info.Name, types.ApplyPatchType, data, &metav1.PatchOptions{Force: &force})
	if err != nil {
		if errors.Is(ctx.Err(), context.Canceled) {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("a dry run of applying %s: %w", infoName(info), err)
	}
	is, ok := applied.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("%s: the API server answered with an object of type %T", infoName(info), applied)
	}
	return is, nil
}

// markedAsHelms returns a copy of obj with the label and annotations Helm adds to every object it
// applies (they are not in the stored manifest): without them the dry run would take them away.
func markedAsHelms(obj *unstructured.Unstructured, name, namespace string) *unstructured.Unstructured {
	obj = obj.DeepCopy()
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels["app.kubernetes.io/managed-by"] = "Helm"
	obj.SetLabels(labels)
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann["meta.helm.sh/release-name"], ann["meta.helm.sh/release-namespace"] = name, namespace
	obj.SetAnnotations(ann)
	return obj
}

// withoutWriteFields returns obj's content without what every write changes (resourceVersion,
// generation, managedFields), without its status, which no apply sets, and, on a StorageClass,
// without the default-class marks: which class is the default is the provider's to keep
// (kube.DemoteDefaultClasses takes the mark from a release's class when another becomes the
// default), not a drift an upgrade should undo.
func withoutWriteFields(obj runtime.Object) map[string]any {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	c := u.DeepCopy().Object
	delete(c, "status")
	meta, _ := c["metadata"].(map[string]any)
	for _, k := range []string{"resourceVersion", "generation", "managedFields"} {
		delete(meta, k)
	}
	if u.GetKind() == "StorageClass" && u.GroupVersionKind().Group == "storage.k8s.io" {
		if ann, ok := meta["annotations"].(map[string]any); ok {
			delete(ann, kube.DefaultClassAnnotation)
			delete(ann, kube.BetaDefaultClassAnnotation)
			if len(ann) == 0 {
				delete(meta, "annotations")
			}
		}
	}
	return c
}

// diffPaths appends the dotted paths under prefix where was and is differ, at most maxDriftPaths,
// in a stable order; a list that differs is named as a whole.
func diffPaths(prefix string, was, is map[string]any, out []string) []string {
	keys := make([]string, 0, len(was)+len(is))
	for k := range was {
		keys = append(keys, k)
	}
	for k := range is {
		if _, ok := was[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if len(out) >= maxDriftPaths {
			break
		}
		p := k
		if prefix != "" {
			p = prefix + "." + k
		}
		a, b := was[k], is[k]
		am, aok := a.(map[string]any)
		bm, bok := b.(map[string]any)
		switch {
		case aok && bok:
			out = diffPaths(p, am, bm, out)
		case !reflect.DeepEqual(a, b):
			out = append(out, p)
		}
	}
	return out
}

func infoName(info *resource.Info) string {
	kind := info.Mapping.GroupVersionKind.Kind
	if info.Namespace == "" {
		return kind + "/" + info.Name
	}
	return kind + "/" + info.Namespace + "/" + info.Name
}

// LiveObjects returns the objects of release st as they are on the cluster; those that are
// missing are left out.
func (c *Client) LiveObjects(ctx context.Context, st *Status) ([]*unstructured.Unstructured, error) {
	cfg, err := c.actionConfig(st.Namespace)
	if err != nil {
		return nil, err
	}
	infos, err := cfg.KubeClient.Build(strings.NewReader(st.Manifest), false)
	if err != nil {
		return nil, fmt.Errorf("reading the manifest of release %s/%s: %w", st.Namespace, st.Name, err)
	}
	var out []*unstructured.Unstructured
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
		u, ok := live.(*unstructured.Unstructured)
		if !ok {
			return nil, fmt.Errorf("%s: the API server answered with an object of type %T", infoName(info), live)
		}
		out = append(out, u)
	}
	return out, nil
}
