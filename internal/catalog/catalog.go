// Package catalog holds what the provider knows of the storage backends it installs and reads,
// shared by the types that deal with them (clusterstorage_storage_backend installs them,
// clusterstorage_storage_capacity reads their disks, clusterstorage_volume_migration measures an
// OpenEBS hostpath class's room): their names, Longhorn's node resource, OpenEBS hostpath's
// provisioner and class configuration. No Terraform types, no other package of this project.
package catalog

import (
	"fmt"

	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// Backend types, as clusterstorage_storage_backend names them.
const (
	BackendLonghorn = "longhorn"
	BackendOpenEBS  = "openebs"
)

// BackendTypes are the backend types the data source reads.
var BackendTypes = []string{BackendLonghorn, BackendOpenEBS}

// LonghornNodeGVR is Longhorn's node resource (nodes.longhorn.io), one object per node in
// Longhorn's namespace, named after the Kubernetes node.
var LonghornNodeGVR = schema.GroupVersionResource{Group: "longhorn.io", Version: "v1beta2", Resource: "nodes"}

// OpenEBS hostpath: the provisioner name and the class annotation holding its configuration
// (openebs/dynamic-localpv-provisioner's hostpath-class.yaml), and the base path it uses when the
// class names none.
const (
	OpenEBSLocalProvisioner = "openebs.io/local"
	OpenEBSConfigAnnotation = "cas.openebs.io/config"
	OpenEBSDefaultBasePath  = "/var/openebs/local"
)

// OpenEBSConfig reads StorageType and BasePath from a class's cas.openebs.io/config annotation,
// a YAML list of {name, value}; OpenEBS's defaults fill what it leaves out.
func OpenEBSConfig(sc storagev1.StorageClass) (storageType, basePath string, err error) {
	storageType, basePath = "hostpath", OpenEBSDefaultBasePath
	text := sc.Annotations[OpenEBSConfigAnnotation]
	if text == "" {
		return storageType, basePath, nil
	}
	var entries []struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	}
	if err := yaml.Unmarshal([]byte(text), &entries); err != nil {
		return "", "", fmt.Errorf("storage class %s: annotation %s is not a YAML list of name/value: %w", sc.Name, OpenEBSConfigAnnotation, err)
	}
	for _, e := range entries {
		switch e.Name {
		case "StorageType":
			storageType = e.Value
		case "BasePath":
			if e.Value != "" {
				basePath = e.Value
			}
		}
	}
	return storageType, basePath, nil
}
