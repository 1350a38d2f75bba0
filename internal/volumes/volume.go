package volumes

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// HostnameLabel is the node label local volumes are pinned by.
const HostnameLabel = "kubernetes.io/hostname"

// provisionedByAnnotation names the provisioner that made a dynamically provisioned volume.
const provisionedByAnnotation = "pv.kubernetes.io/provisioned-by"

// Driver is what serves a claim's volume: the CSI driver of its volume, else the provisioner
// that made it (pv.kubernetes.io/provisioned-by), else its class's provisioner. pv and class
// may be nil.
func Driver(pv *corev1.PersistentVolume, class *storagev1.StorageClass) string {
	if pv != nil {
		if pv.Spec.CSI != nil && pv.Spec.CSI.Driver != "" {
			return pv.Spec.CSI.Driver
		}
		if p := pv.Annotations[provisionedByAnnotation]; p != "" {
			return p
		}
	}
	if class != nil {
		return class.Provisioner
	}
	return ""
}

// Node is the node a local volume lives on: the one value of its node affinity's
// kubernetes.io/hostname term, when it has exactly one such term with one value. Volumes that
// any node may mount (network storage) give "".
func Node(pv *corev1.PersistentVolume) string {
	if pv == nil || pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return ""
	}
	node := ""
	for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		for _, e := range term.MatchExpressions {
			if e.Key == HostnameLabel && e.Operator == corev1.NodeSelectorOpIn && len(e.Values) == 1 {
				if node != "" && node != e.Values[0] {
					return ""
				}
				node = e.Values[0]
			}
		}
	}
	return node
}

// ClassOf is the claim's storage class name ("" when it has none).
func ClassOf(c *corev1.PersistentVolumeClaim) string {
	if c.Spec.StorageClassName != nil {
		return *c.Spec.StorageClassName
	}
	return c.Annotations[corev1.BetaStorageClassAnnotation]
}

// MigrationAnnotation is where clusterstorage_volume_migration records a claim's migration
// (JSON); SourceClass names the class the claim was moved off.
const MigrationAnnotation = "clusterstorage.io/migration"

// MigratedToAnnotation is where clusterstorage_volume_migration marks the source volume it kept
// once the claim moved: "<namespace>/<claim> <new volume>" (the storage backend's destroy guard
// names the migration from it).
const MigratedToAnnotation = "clusterstorage.io/migrated-to"

// MigratedFrom is the StorageClass a finished migration moved the claim off, "" when none.
func MigratedFrom(c *corev1.PersistentVolumeClaim) string {
	v, ok := c.Annotations[MigrationAnnotation]
	if !ok {
		return ""
	}
	var rec struct {
		Phase       string `json:"phase"`
		SourceClass string `json:"sourceClass"`
	}
	if json.Unmarshal([]byte(v), &rec) != nil || rec.Phase != "done" {
		return ""
	}
	return rec.SourceClass
}
