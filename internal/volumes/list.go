package volumes

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
)

// Volume is one claim as the data source reports it.
type Volume struct {
	Namespace, Name, StorageClass, MigratedFrom, Driver, Volume, Size, Node, Phase, VolumeMode string
	AccessModes                                                                                []string
	Workloads                                                                                  []Workload
}

// List reads the claims that match f, with their volumes and the workloads that mount them.
func List(ctx context.Context, client kubernetes.Interface, f filter) ([]Volume, error) {
	opts := metav1.ListOptions{}
	if f.LabelSelector != "" {
		if _, err := labels.Parse(f.LabelSelector); err != nil {
			return nil, fmt.Errorf("label_selector %q: %w", f.LabelSelector, err)
		}
		opts.LabelSelector = f.LabelSelector
	}
	claims, err := client.CoreV1().PersistentVolumeClaims(f.Namespace).List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("listing persistentvolumeclaims: %w", err)
	}
	pvs, err := client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing persistentvolumes: %w", err)
	}
	classes, err := client.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing storageclasses: %w", err)
	}
	return match(ctx, client, f, claims.Items, pvs.Items, classes.Items)
}

// match filters the claims and describes each; the workloads are read only for the namespaces
// of the claims that match.
func match(ctx context.Context, client kubernetes.Interface, f filter, claims []corev1.PersistentVolumeClaim, pvs []corev1.PersistentVolume, classes []storagev1.StorageClass) ([]Volume, error) {
	pvByName := map[string]*corev1.PersistentVolume{}
	for i := range pvs {
		pvByName[pvs[i].Name] = &pvs[i]
	}
	classByName := map[string]*storagev1.StorageClass{}
	for i := range classes {
		classByName[classes[i].Name] = &classes[i]
	}
	var out []Volume
	inventories := map[string]*Inventory{}
	for i := range claims {
		c := &claims[i]
		class, from := ClassOf(c), MigratedFrom(c)
		if f.StorageClass != "" && class != f.StorageClass && (!f.IncludeMigrated || from != f.StorageClass) {
			continue
		}
		pv := pvByName[c.Spec.VolumeName]
		driver := Driver(pv, classByName[class])
		if f.Driver != "" && driver != f.Driver {
			continue
		}
		v := Volume{
			Namespace: c.Namespace, Name: c.Name, StorageClass: class, MigratedFrom: from, Driver: driver,
			Volume: c.Spec.VolumeName, Node: Node(pv), Phase: string(c.Status.Phase),
			VolumeMode: string(corev1.PersistentVolumeFilesystem),
		}
		if c.Spec.VolumeMode != nil {
			v.VolumeMode = string(*c.Spec.VolumeMode)
		}
		for _, a := range c.Spec.AccessModes {
			v.AccessModes = append(v.AccessModes, string(a))
		}
		if q, ok := c.Status.Capacity[corev1.ResourceStorage]; ok {
			v.Size = q.String()
		} else if q, ok := c.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
			v.Size = q.String()
		}
		inv := inventories[c.Namespace]
		if inv == nil {
			var err error
			if inv, err = Scan(ctx, client, c.Namespace); err != nil {
				return nil, fmt.Errorf("namespace %s: %w", c.Namespace, err)
			}
			inventories[c.Namespace] = inv
		}
		v.Workloads = inv.Mounting(c.Namespace, c.Name)
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}
