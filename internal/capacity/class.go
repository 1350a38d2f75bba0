package capacity

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/kubernetes"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

// NoProvisioner is the provisioner of statically provisioned classes (local volumes).
const NoProvisioner = "kubernetes.io/no-provisioner"

// Names of what a class's capacity is known from, in capacity_sources.
const (
	SourceCSIStorageCapacity = "csi_storage_capacity"
	SourceAvailableVolumes   = "available_volumes"
)

// ClassCapacity is what the cluster says a StorageClass can still provision.
type ClassCapacity struct {
	Name, Provisioner string
	// CSI sums the class's CSIStorageCapacity objects; nil when there are none.
	CSI *CSICapacity
	// Available counts the class's Available PersistentVolumes; nil unless the class is
	// kubernetes.io/no-provisioner (other classes make their volumes on demand).
	Available *VolumeStats
	// AvailableByNode is Available per node: the volumes a pod on that node could bind.
	AvailableByNode map[string]VolumeStats
}

// Sources lists what the capacity is known from.
func (c ClassCapacity) Sources() []string {
	out := []string{}
	if c.CSI != nil {
		out = append(out, SourceCSIStorageCapacity)
	}
	if c.Available != nil {
		out = append(out, SourceAvailableVolumes)
	}
	return out
}

// CSICapacity is the sum of a class's CSIStorageCapacity objects, per topology segment.
type CSICapacity struct {
	CapacityBytes int64
	// MaximumVolumeSizeBytes is the largest maximumVolumeSize of any object; nil when none says.
	MaximumVolumeSizeBytes *int64
	Segments               []Segment
}

// Segment is one topology segment: the objects with the same node topology selector.
type Segment struct {
	// Selector is the node topology as a label selector string ("" selects every node); nil
	// for objects without a node topology, which no node can use.
	Selector    *string
	MatchLabels map[string]string
	// Nodes are the cluster's nodes the selector selects.
	Nodes                  []string
	CapacityBytes          int64
	MaximumVolumeSizeBytes *int64
	Objects                int64
}

// VolumeStats counts volumes.
type VolumeStats struct {
	Count, TotalBytes, LargestBytes int64
}

func (s *VolumeStats) add(bytes int64) {
	s.Count++
	s.TotalBytes += bytes
	s.LargestBytes = max(s.LargestBytes, bytes)
}

// readClass reads the class name and what capacity the cluster publishes for it. A class the
// cluster does not have is an error naming the classes it has.
func readClass(ctx context.Context, client kubernetes.Interface, name string) (ClassCapacity, error) {
	sc, err := client.StorageV1().StorageClasses().Get(ctx, name, metav1.GetOptions{})
	if kube.IsNotFound(err) {
		names := []string{}
		if list, lerr := client.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{}); lerr == nil {
			for _, c := range list.Items {
				names = append(names, c.Name)
			}
		}
		sort.Strings(names)
		return ClassCapacity{}, fmt.Errorf("the cluster has no storage class %q; it has: %s", name, listOrNone(names))
	}
	if err != nil {
		return ClassCapacity{}, fmt.Errorf("reading storage class %s: %w", name, err)
	}
	out := ClassCapacity{Name: sc.Name, Provisioner: sc.Provisioner}
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return ClassCapacity{}, fmt.Errorf("listing nodes: %w", err)
	}
	if out.CSI, err = csiCapacity(ctx, client, name, nodes.Items); err != nil {
		return ClassCapacity{}, err
	}
	if sc.Provisioner == NoProvisioner {
		if err := out.availableVolumes(ctx, client, nodes.Items); err != nil {
			return ClassCapacity{}, err
		}
	}
	return out, nil
}

// csiCapacity sums the class's CSIStorageCapacity objects (in every namespace) per topology
// segment; nil when there are none.
func csiCapacity(ctx context.Context, client kubernetes.Interface, class string, nodes []corev1.Node) (*CSICapacity, error) {
	list, err := client.StorageV1().CSIStorageCapacities(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing CSIStorageCapacity objects: %w", err)
	}
	segments := map[string]*Segment{}
	var keys []string
	out := &CSICapacity{}
	for _, c := range list.Items {
		if c.StorageClassName != class {
			continue
		}
		key := "<none>"
		var selector *string
		sel := labels.Nothing()
		if c.NodeTopology != nil {
			if sel, err = metav1.LabelSelectorAsSelector(c.NodeTopology); err != nil {
				return nil, fmt.Errorf("CSIStorageCapacity %s/%s: node topology: %w", c.Namespace, c.Name, err)
			}
			s := sel.String()
			key, selector = s, &s
		}
		seg := segments[key]
		if seg == nil {
			seg = &Segment{Selector: selector, Nodes: []string{}}
			if c.NodeTopology != nil {
				seg.MatchLabels = c.NodeTopology.MatchLabels
			}
			for _, n := range nodes {
				if sel.Matches(labels.Set(n.Labels)) {
					seg.Nodes = append(seg.Nodes, n.Name)
				}
			}
			sort.Strings(seg.Nodes)
			segments[key] = seg
			keys = append(keys, key)
		}
		seg.Objects++
		if c.Capacity != nil {
			seg.CapacityBytes += c.Capacity.Value()
			out.CapacityBytes += c.Capacity.Value()
		}
		if c.MaximumVolumeSize != nil {
			seg.MaximumVolumeSizeBytes = maxPtr(seg.MaximumVolumeSizeBytes, c.MaximumVolumeSize.Value())
			out.MaximumVolumeSizeBytes = maxPtr(out.MaximumVolumeSizeBytes, c.MaximumVolumeSize.Value())
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	sort.Strings(keys)
	for _, k := range keys {
		out.Segments = append(out.Segments, *segments[k])
	}
	return out, nil
}

func maxPtr(p *int64, v int64) *int64 {
	if p != nil && *p >= v {
		return p
	}
	return &v
}

// availableVolumes counts the class's Available PersistentVolumes, in total and per node the
// volume's node affinity allows.
func (c *ClassCapacity) availableVolumes(ctx context.Context, client kubernetes.Interface, nodes []corev1.Node) error {
	pvs, err := client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing persistent volumes: %w", err)
	}
	c.Available = &VolumeStats{}
	c.AvailableByNode = map[string]VolumeStats{}
	for _, pv := range pvs.Items {
		if pv.Spec.StorageClassName != c.Name || pv.Status.Phase != corev1.VolumeAvailable {
			continue
		}
		q := pv.Spec.Capacity[corev1.ResourceStorage]
		bytes := q.Value()
		c.Available.add(bytes)
		for _, n := range nodes {
			ok, err := volumeFits(pv.Spec.NodeAffinity, &n)
			if err != nil {
				return fmt.Errorf("persistent volume %s: node affinity: %w", pv.Name, err)
			}
			if ok {
				s := c.AvailableByNode[n.Name]
				s.add(bytes)
				c.AvailableByNode[n.Name] = s
			}
		}
	}
	return nil
}

// volumeFits reports whether a volume's required node affinity allows node n: its terms are
// ORed, the requirements of a term ANDed, as the scheduler reads them.
func volumeFits(a *corev1.VolumeNodeAffinity, n *corev1.Node) (bool, error) {
	if a == nil || a.Required == nil {
		return true, nil
	}
	for _, term := range a.Required.NodeSelectorTerms {
		ok, err := termMatches(term, n)
		if err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

func termMatches(term corev1.NodeSelectorTerm, n *corev1.Node) (bool, error) {
	if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
		return false, nil // an empty term selects nothing
	}
	for _, set := range []struct {
		reqs   []corev1.NodeSelectorRequirement
		values labels.Set
	}{{term.MatchExpressions, labels.Set(n.Labels)}, {term.MatchFields, labels.Set{"metadata.name": n.Name}}} {
		for _, r := range set.reqs {
			op, ok := map[corev1.NodeSelectorOperator]selection.Operator{
				corev1.NodeSelectorOpIn: selection.In, corev1.NodeSelectorOpNotIn: selection.NotIn,
				corev1.NodeSelectorOpExists: selection.Exists, corev1.NodeSelectorOpDoesNotExist: selection.DoesNotExist,
				corev1.NodeSelectorOpGt: selection.GreaterThan, corev1.NodeSelectorOpLt: selection.LessThan,
			}[r.Operator]
			if !ok {
				return false, fmt.Errorf("unknown operator %q", r.Operator)
			}
			req, err := labels.NewRequirement(r.Key, op, r.Values)
			if err != nil {
				return false, err
			}
			if !req.Matches(set.values) {
				return false, nil
			}
		}
	}
	return true, nil
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// ReadClass reads what the cluster says StorageClass name can still provision: its
// CSIStorageCapacity objects and, for a kubernetes.io/no-provisioner class, its Available
// volumes per node. clusterstorage_volume_migration checks the room on its target with it.
func ReadClass(ctx context.Context, client kubernetes.Interface, name string) (ClassCapacity, error) {
	return readClass(ctx, client, name)
}
