package kube

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
)

// Snapshot holds every object of one cluster-scoped kind, listed once, so that refreshing N
// resources of that kind costs one LIST instead of N GETs. It lives as long as one provider
// configuration (Terraform configures the provider anew for each plan and apply), is filled on
// the first Get, and is kept current by the provider's own writes (Put after a create or update,
// Forget after a delete). It is for refresh only: a write reads the live object, never this.
//
// When the LIST fails (for instance RBAC grants get but not list), Get reads each object live
// from then on.
type Snapshot[T any] struct {
	list     func(ctx context.Context) ([]T, error)
	get      func(ctx context.Context, name string) (*T, error)
	name     func(*T) string
	resource schema.GroupResource
	trim     func(*T) // drops what no refresh reads from an object kept here; may be nil

	mu     sync.Mutex
	state  snapshotState
	items  map[string]*T
	listed int // LIST requests made, for tests
}

type snapshotState int

const (
	snapshotEmpty snapshotState = iota
	snapshotFilled
	snapshotLive // the LIST failed: read each object live
)

// NewSnapshot returns an empty snapshot of the kind that list and get read; name gives an
// object's name and resource the kind's name in not-found errors.
func NewSnapshot[T any](resource schema.GroupResource, list func(context.Context) ([]T, error),
	get func(context.Context, string) (*T, error), name func(*T) string) *Snapshot[T] {
	return &Snapshot[T]{list: list, get: get, name: name, resource: resource}
}

// Get returns the object named name as the snapshot has it, or a not-found error (IsNotFound)
// when the cluster did not have it when listed, or it was deleted since by this provider. The
// caller must not modify the object.
func (s *Snapshot[T]) Get(ctx context.Context, name string) (*T, error) {
	if s.fill(ctx) {
		return s.get(ctx, name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if obj, ok := s.items[name]; ok {
		return obj, nil
	}
	return nil, apierrors.NewNotFound(s.resource, name)
}

// All returns every object the snapshot has (read live when listing failed). The caller must
// not modify them.
func (s *Snapshot[T]) All(ctx context.Context) ([]*T, error) {
	if s.fill(ctx) {
		items, err := s.list(ctx)
		if err != nil {
			return nil, err
		}
		all := make([]*T, len(items))
		for i := range items {
			all[i] = &items[i]
		}
		return all, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	all := make([]*T, 0, len(s.items))
	for _, obj := range s.items {
		all = append(all, obj)
	}
	return all, nil
}

// Put records obj as written by this provider (the object a create or update returned).
func (s *Snapshot[T]) Put(obj *T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == snapshotFilled {
		if s.trim != nil {
			kept := *obj
			s.trim(&kept)
			obj = &kept
		}
		s.items[s.name(obj)] = obj
	}
}

// Forget records that this provider deleted the object named name.
func (s *Snapshot[T]) Forget(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.items, name)
}

// fill lists the kind on first use; it reports whether objects must be read live instead.
func (s *Snapshot[T]) fill(ctx context.Context) (live bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == snapshotEmpty {
		s.listed++
		items, err := s.list(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return true // cancelled: the next Get may list again
			}
			s.state = snapshotLive
			return true
		}
		s.items = make(map[string]*T, len(items))
		for i := range items {
			if s.trim != nil {
				s.trim(&items[i])
			}
			s.items[s.name(&items[i])] = &items[i]
		}
		s.state = snapshotFilled
	}
	return s.state == snapshotLive
}

// withoutManagedFields drops an object's managed fields (server-side apply's record of who set
// which field): no refresh reads them, and they are a third to a half of a class's or a volume's
// size in memory, which a snapshot of every object of a kind would keep for the whole run.
func withoutManagedFields(obj metav1.Object) { obj.SetManagedFields(nil) }

// listPageSize bounds one LIST response, so that a cluster with many objects is read in pages.
const listPageSize = 500

// StorageClassSnapshot is a Snapshot of the cluster's StorageClasses.
func StorageClassSnapshot(client func() (kubernetes.Interface, error)) *Snapshot[storagev1.StorageClass] {
	s := NewSnapshot(storagev1.Resource("storageclasses"),
		func(ctx context.Context) ([]storagev1.StorageClass, error) {
			c, err := client()
			if err != nil {
				return nil, err
			}
			return listAll(ctx, func(opts metav1.ListOptions) ([]storagev1.StorageClass, string, error) {
				l, err := c.StorageV1().StorageClasses().List(ctx, opts)
				if err != nil {
					return nil, "", err
				}
				return l.Items, l.Continue, nil
			})
		},
		func(ctx context.Context, name string) (*storagev1.StorageClass, error) {
			c, err := client()
			if err != nil {
				return nil, err
			}
			return c.StorageV1().StorageClasses().Get(ctx, name, metav1.GetOptions{})
		},
		func(sc *storagev1.StorageClass) string { return sc.Name })
	s.trim = func(sc *storagev1.StorageClass) { withoutManagedFields(sc) }
	return s
}

// PersistentVolumeSnapshot is a Snapshot of the cluster's PersistentVolumes.
func PersistentVolumeSnapshot(client func() (kubernetes.Interface, error)) *Snapshot[corev1.PersistentVolume] {
	s := NewSnapshot(corev1.Resource("persistentvolumes"),
		func(ctx context.Context) ([]corev1.PersistentVolume, error) {
			c, err := client()
			if err != nil {
				return nil, err
			}
			return listAll(ctx, func(opts metav1.ListOptions) ([]corev1.PersistentVolume, string, error) {
				l, err := c.CoreV1().PersistentVolumes().List(ctx, opts)
				if err != nil {
					return nil, "", err
				}
				return l.Items, l.Continue, nil
			})
		},
		func(ctx context.Context, name string) (*corev1.PersistentVolume, error) {
			c, err := client()
			if err != nil {
				return nil, err
			}
			return c.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
		},
		func(pv *corev1.PersistentVolume) string { return pv.Name })
	s.trim = func(pv *corev1.PersistentVolume) { withoutManagedFields(pv) }
	return s
}

// listAll follows a LIST's continue tokens.
func listAll[T any](ctx context.Context, page func(metav1.ListOptions) ([]T, string, error)) ([]T, error) {
	var all []T
	opts := metav1.ListOptions{Limit: listPageSize}
	for {
		items, next, err := page(opts)
		if err != nil {
			return nil, err
		}
		all = append(all, items...)
		if next == "" || ctx.Err() != nil {
			return all, ctx.Err()
		}
		opts.Continue = next
	}
}
