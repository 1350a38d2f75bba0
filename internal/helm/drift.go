package helm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
	helmkube "helm.sh/helm/v4/pkg/kube"
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
// what applying the manifest again would change: a server-side apply, dry run and forced, by the
// field manager Helm applies with. So the server's defaults and formats, and fields the chart
// leaves to others (a Service's clusterIP, a controller's annotations), never count; a field the
// chart sets and a controller changes (a Deployment's replicas under an autoscaler) does, as an
// upgrade would take it back. An upgrade of the release puts everything listed back.
func (c *Client) ObjectDrift(ctx context.Context, st *Status) ([]string, error) {
	cfg, err := c.actionConfig(st.Namespace)
	if err != nil {
		return nil, err
	}
	infos, err := cfg.KubeClient.Build(strings.NewReader(st.Manifest), false)
	if err != nil {
		return nil, fmt.Errorf("reading the manifest of release %s/%s: %w", st.Namespace, st.Name, err)
	}
	var drift []string
	for _, info := range infos {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		paths, err := objectDrift(ctx, info, st.Name, st.Namespace)
		if err != nil {
			return nil, err
		}
		if paths != nil {
			drift = append(drift, fmt.Sprintf("%s (%s)", infoName(info), strings.Join(paths, ", ")))
		}
	}
	return drift, nil
}

// objectDrift returns what applying info's object of release name in namespace would change on the
// live one, nil for nothing.
func objectDrift(ctx context.Context, info *resource.Info, name, namespace string) ([]string, error) {
	h := resource.NewHelper(info.Client, info.Mapping).WithFieldManager(fieldManager()).DryRun(true)
	live, err := h.Get(info.Namespace, info.Name)
	if apierrors.IsNotFound(err) {
		return []string{"missing"}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", infoName(info), err)
	}
	obj, ok := info.Object.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("%s: the manifest gave an object of type %T", infoName(info), info.Object)
	}
	obj = markedAsHelms(obj, name, namespace)
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
	was, is := withoutWriteFields(live), withoutWriteFields(applied)
	if was == nil || is == nil {
		return nil, fmt.Errorf("%s: the API server answered with an object of type %T", infoName(info), applied)
	}
	return diffPaths("", was, is, nil), nil
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

// fieldManager is the field manager Helm applies with: helmkube.ManagedFieldsManager when set, else
// the program's name, as Helm's own unexported getManagedFieldsManager decides.
func fieldManager() string {
	if helmkube.ManagedFieldsManager != "" {
		return helmkube.ManagedFieldsManager
	}
	if os.Args[0] == "" {
		return "unknown"
	}
	return filepath.Base(os.Args[0])
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
