package kube

import (
	"context"
	"fmt"
	"sort"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// The annotations that make a StorageClass the cluster's default (GA and the older beta form,
// which Kubernetes still honours).
const (
	DefaultClassAnnotation     = "storageclass.kubernetes.io/is-default-class"
	BetaDefaultClassAnnotation = "storageclass.beta.kubernetes.io/is-default-class"
)

// IsDefaultClass reports whether a class carries a default-class annotation set to "true".
func IsDefaultClass(sc *storagev1.StorageClass) bool {
	return sc.Annotations[DefaultClassAnnotation] == "true" || sc.Annotations[BetaDefaultClassAnnotation] == "true"
}

// DemotedClass is a StorageClass DemoteDefaultClasses took the default mark from (Err nil) or
// failed to (Err says why).
type DemotedClass struct {
	Name   string
	Object *storagev1.StorageClass // the class as patched, when Err is nil
	Err    error
}

// DemoteDefaultClasses removes both default-class annotations from every StorageClass but keep
// that carries one, so that keep is the only default (Kubernetes gives claims without a class
// the newest default when there are several, which is rarely what anyone wants). It returns
// each class it changed or failed to change, by name; the error is for listing the classes.
// A class deleted meanwhile is skipped.
func DemoteDefaultClasses(ctx context.Context, client kubernetes.Interface, keep string) ([]DemotedClass, error) {
	list, err := client.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing StorageClasses: %w", err)
	}
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:null,%q:null}}}`, DefaultClassAnnotation, BetaDefaultClassAnnotation))
	var out []DemotedClass
	for i := range list.Items {
		other := &list.Items[i]
		if other.Name == keep || !IsDefaultClass(other) {
			continue
		}
		patched, err := client.StorageV1().StorageClasses().Patch(ctx, other.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if IsNotFound(err) {
			continue
		}
		if err != nil {
			patched = nil
		}
		out = append(out, DemotedClass{Name: other.Name, Object: patched, Err: err})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
