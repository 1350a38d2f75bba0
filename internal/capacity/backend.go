package capacity

import (
	"context"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/catalog"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

// helmReleaseNamespace is the annotation Helm puts on every object of a release it installs,
// upgrades or rolls back (helm v3 pkg/action/validate.go, setMetadataVisitor).
const helmReleaseNamespace = "meta.helm.sh/release-namespace"

// LonghornNode is Longhorn's view of one node (status of its nodes.longhorn.io object).
type LonghornNode struct {
	Name string
	// Ready and Schedulable are the node's conditions; nil when Longhorn has not set them.
	Ready, Schedulable *bool
	AllowScheduling    bool
	Disks              map[string]LonghornDisk
}

// LonghornDisk is one disk of a Longhorn node: its spec and, once Longhorn has seen it, status.
type LonghornDisk struct {
	Path            string
	AllowScheduling bool
	StorageReserved int64
	// StorageMaximum, StorageAvailable and StorageScheduled are nil until Longhorn reports them.
	StorageMaximum, StorageAvailable, StorageScheduled *int64
	Ready, Schedulable                                 *bool
}

// Sum adds up the node's disks: maximum, available, scheduled and reserved bytes.
func (n LonghornNode) Sum() (maximum, available, scheduled, reserved int64) {
	for _, d := range n.Disks {
		maximum += deref(d.StorageMaximum)
		available += deref(d.StorageAvailable)
		scheduled += deref(d.StorageScheduled)
		reserved += d.StorageReserved
	}
	return
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// longhornNodeObject holds the fields of nodes.longhorn.io (longhorn-manager's
// k8s/pkg/apis/longhorn/v1beta2/node.go) the data source reads.
type longhornNodeObject struct {
	Metadata metav1.ObjectMeta `json:"metadata"`
	Spec     struct {
		AllowScheduling bool `json:"allowScheduling"`
		Disks           map[string]struct {
			Path            string `json:"path"`
			AllowScheduling bool   `json:"allowScheduling"`
			StorageReserved int64  `json:"storageReserved"`
		} `json:"disks"`
	} `json:"spec"`
	Status struct {
		Conditions []longhornCondition `json:"conditions"`
		DiskStatus map[string]*struct {
			Conditions       []longhornCondition `json:"conditions"`
			StorageAvailable *int64              `json:"storageAvailable"`
			StorageScheduled *int64              `json:"storageScheduled"`
			StorageMaximum   *int64              `json:"storageMaximum"`
			DiskPath         string              `json:"diskPath"`
		} `json:"diskStatus"`
	} `json:"status"`
}

type longhornCondition struct {
	Type   string `json:"type"`
	Status string `json:"status"`
}

func condition(conds []longhornCondition, typ string) *bool {
	for _, c := range conds {
		if c.Type == typ {
			v := c.Status == "True"
			return &v
		}
	}
	return nil
}

// readLonghorn reads the nodes.longhorn.io objects in namespace, keyed by node name.
func readLonghorn(ctx context.Context, client dynamic.Interface, namespace string) (map[string]LonghornNode, error) {
	list, err := client.Resource(catalog.LonghornNodeGVR).Namespace(namespace).List(ctx, metav1.ListOptions{})
	if kube.IsNotFound(err) || meta.IsNoMatchError(err) {
		return nil, fmt.Errorf("the cluster has no %s resource: Longhorn's CRDs are not installed (install Longhorn with clusterstorage_storage_backend first)", catalog.LonghornNodeGVR.GroupResource())
	}
	if err != nil {
		return nil, fmt.Errorf("listing %s in namespace %s: %w", catalog.LonghornNodeGVR.GroupResource(), namespace, err)
	}
	if len(list.Items) == 0 {
		return nil, fmt.Errorf("namespace %s has no %s objects: Longhorn's manager makes one per node once it runs; "+
			"check that Longhorn is installed in that namespace and its manager pods are running", namespace, catalog.LonghornNodeGVR.GroupResource())
	}
	out := map[string]LonghornNode{}
	for _, item := range list.Items {
		var obj longhornNodeObject
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, &obj); err != nil {
			return nil, fmt.Errorf("reading %s %s/%s: %w", catalog.LonghornNodeGVR.GroupResource(), namespace, item.GetName(), err)
		}
		n := LonghornNode{
			Name:  obj.Metadata.Name,
			Ready: condition(obj.Status.Conditions, "Ready"), Schedulable: condition(obj.Status.Conditions, "Schedulable"),
			AllowScheduling: obj.Spec.AllowScheduling, Disks: map[string]LonghornDisk{},
		}
		for name, spec := range obj.Spec.Disks {
			n.Disks[name] = LonghornDisk{Path: spec.Path, AllowScheduling: spec.AllowScheduling, StorageReserved: spec.StorageReserved}
		}
		for name, st := range obj.Status.DiskStatus {
			if st == nil {
				continue
			}
			d := n.Disks[name]
			if d.Path == "" {
				d.Path = st.DiskPath
			}
			d.StorageMaximum, d.StorageAvailable, d.StorageScheduled = st.StorageMaximum, st.StorageAvailable, st.StorageScheduled
			d.Ready, d.Schedulable = condition(st.Conditions, "Ready"), condition(st.Conditions, "Schedulable")
			n.Disks[name] = d
		}
		out[n.Name] = n
	}
	return out, nil
}

// openEBSBasePath finds the base path of the OpenEBS hostpath classes of the Helm release in
// namespace: the BasePath in their cas.openebs.io/config annotation (default /var/openebs/local).
func openEBSBasePath(ctx context.Context, client kubernetes.Interface, namespace string) (string, error) {
	list, err := client.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", fmt.Errorf("listing storage classes: %w", err)
	}
	paths := map[string][]string{}
	for _, sc := range list.Items {
		if sc.Provisioner != catalog.OpenEBSLocalProvisioner || sc.Annotations[helmReleaseNamespace] != namespace {
			continue
		}
		storageType, basePath, err := catalog.OpenEBSConfig(sc)
		if err != nil {
			return "", err
		}
		if storageType == "hostpath" {
			paths[basePath] = append(paths[basePath], sc.Name)
		}
	}
	switch len(paths) {
	case 0:
		return "", fmt.Errorf("no OpenEBS hostpath storage class (provisioner %s, StorageType hostpath) belongs to a Helm release in namespace %s: "+
			"check the backend's namespace, that its hostpath class is enabled, or set backend.base_path", catalog.OpenEBSLocalProvisioner, namespace)
	case 1:
		for p := range paths {
			return p, nil
		}
	}
	var found []string
	for p, classes := range paths {
		found = append(found, fmt.Sprintf("%s (%v)", p, classes))
	}
	sort.Strings(found)
	return "", fmt.Errorf("the OpenEBS hostpath classes in namespace %s use different base paths: %v; set backend.base_path to the one to measure", namespace, found)
}
