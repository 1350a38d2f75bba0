package volumemigration

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/capacity"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/catalog"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/volumes"
)

// TestUnlimitedClass: rancher local-path's classes (by its own provisioner name or its chart's)
// and OpenEBS hostpath's without a quota hold a volume to nothing; with XFSQuota or EXT4Quota
// enabled, OpenEBS's device classes and every other class hold it to its size.
func TestUnlimitedClass(t *testing.T) {
	class := func(provisioner, config string) *storagev1.StorageClass {
		c := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Provisioner: provisioner}
		if config != "" {
			c.Annotations = map[string]string{catalog.OpenEBSConfigAnnotation: config}
		}
		return c
	}
	for _, c := range []struct {
		class *storagev1.StorageClass
		want  bool
	}{
		{nil, false},
		{class("rancher.io/local-path", ""), true},
		{class("cluster.local/local-path-provisioner", ""), true},
		{class("cluster.local/other", ""), false},
		{class("openebs.io/local", ""), true},
		{class("openebs.io/local", "- name: StorageType\n  value: hostpath\n- name: XFSQuota\n  enabled: \"true\"\n  data:\n    softLimitGrace: \"0%\"\n"), false},
		{class("openebs.io/local", "- name: EXT4Quota\n  enabled: true\n"), false},
		{class("openebs.io/local", "- name: XFSQuota\n  enabled: \"false\"\n"), true},
		{class("openebs.io/local", "- name: StorageType\n  value: device\n"), false},
		{class("kubernetes.io/no-provisioner", ""), false},
		{class("driver.longhorn.io", ""), false},
	} {
		name := "nil"
		if c.class != nil {
			name = c.class.Provisioner + " " + c.class.Annotations[catalog.OpenEBSConfigAnnotation]
		}
		if got := unlimitedClass(c.class); got != c.want {
			t.Errorf("%s: unlimited %t, want %t", name, got, c.want)
		}
	}
}

// localPathConfigMap is local-path's ConfigMap in ns with config.json.
func localPathCM(ns, config string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: localPathConfigMap, Namespace: ns}, Data: map[string]string{"config.json": config}}
}

// TestLocalPathRoom: where local-path puts a volume of a class on a node, as its provisioner
// reads its configuration: the node's own entry before the default one, the class's nodePath
// among them, the class's own configuration when storageClassConfigs names classes, a shared
// filesystem; no path (the provisioner refuses) said as such; nothing known without the
// ConfigMap, with one in both namespaces, or when the role may not read it.
func TestLocalPathRoom(t *testing.T) {
	const def = `{"nodePathMap":[{"node":"DEFAULT_PATH_FOR_NON_LISTED_NODES","paths":["/opt/local-path-provisioner"]},{"node":"n2","paths":["/mnt/nvme","/mnt/ssd"]},{"node":"n3","paths":[]}]}`
	class := func(name, nodePath string) *storagev1.StorageClass {
		c := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: localPathProvisioner}
		if nodePath != "" {
			c.Parameters = map[string]string{"nodePath": nodePath}
		}
		return c
	}
	for name, c := range map[string]struct {
		objects []runtime.Object
		class   *storagev1.StorageClass
		node    string
		paths   []string
		noPath  string
		unknown bool
	}{
		"default entry":       {objects: []runtime.Object{localPathCM("kube-system", def)}, class: class("local-path", ""), node: "n1", paths: []string{"/opt/local-path-provisioner"}},
		"the node's entry":    {objects: []runtime.Object{localPathCM("local-path-storage", def)}, class: class("local-path", ""), node: "n2", paths: []string{"/mnt/nvme", "/mnt/ssd"}},
		"nodePath":            {objects: []runtime.Object{localPathCM("kube-system", def)}, class: class("nvme", "/mnt/nvme"), node: "n2", paths: []string{"/mnt/nvme"}},
		"nodePath not listed": {objects: []runtime.Object{localPathCM("kube-system", def)}, class: class("nvme", "/mnt/nvme"), node: "n1", noPath: "StorageClass nvme asks for nodePath /mnt/nvme, which its nodePathMap does not give node n1 (it gives /opt/local-path-provisioner)"},
		"no path on the node": {objects: []runtime.Object{localPathCM("kube-system", def)}, class: class("local-path", ""), node: "n3", noPath: "its nodePathMap gives node n3 no path"},
		"no entry, no default": {objects: []runtime.Object{localPathCM("kube-system", `{"nodePathMap":[{"node":"n2","paths":["/d"]}]}`)}, class: class("local-path", ""), node: "n1",
			noPath: "its nodePathMap names neither node n1 nor DEFAULT_PATH_FOR_NON_LISTED_NODES"},
		"per class": {objects: []runtime.Object{localPathCM("kube-system", `{"storageClassConfigs":{"fast":{"nodePathMap":[{"node":"DEFAULT_PATH_FOR_NON_LISTED_NODES","paths":["/fast"]}]},"slow":{"nodePathMap":[{"node":"DEFAULT_PATH_FOR_NON_LISTED_NODES","paths":["/slow"]}]}}}`)},
			class: class("fast", ""), node: "n1", paths: []string{"/fast"}},
		"per class, not this one": {objects: []runtime.Object{localPathCM("kube-system", `{"storageClassConfigs":{"slow":{"nodePathMap":[{"node":"DEFAULT_PATH_FOR_NON_LISTED_NODES","paths":["/slow"]}]}}}`)},
			class: class("fast", ""), node: "n1", noPath: "its storageClassConfigs do not name class fast"},
		"shared filesystem": {objects: []runtime.Object{localPathCM("kube-system", `{"sharedFileSystemPath":"/mnt/nfs"}`)}, class: class("local-path", ""), node: "n1", paths: []string{"/mnt/nfs"}},
		"no ConfigMap":      {class: class("local-path", ""), node: "n1", unknown: true},
		"two ConfigMaps": {objects: []runtime.Object{localPathCM("kube-system", def), localPathCM("local-path-storage", def)}, class: class("local-path", ""), node: "n1",
			unknown: true},
	} {
		t.Run(name, func(t *testing.T) {
			m := &Migrator{Client: fake.NewClientset(c.objects...)}
			room, err := m.localPathRoom(context.Background(), c.class, c.node)
			must(t, err)
			switch {
			case c.unknown:
				if room != nil {
					t.Errorf("room %+v, want unknown", room)
				}
				return
			case room == nil:
				t.Fatal("room unknown")
			case room.NoPath != c.noPath && (c.noPath == "" || !strings.Contains(room.NoPath, c.noPath)):
				t.Errorf("no path: %q, want %q", room.NoPath, c.noPath)
			}
			var got []string
			for _, p := range room.Paths {
				got = append(got, p.Path)
			}
			if strings.Join(got, ",") != strings.Join(c.paths, ",") {
				t.Errorf("paths %v, want %v", got, c.paths)
			}
			if room.Node != c.node || !strings.HasSuffix(room.Config, "/"+localPathConfigMap) {
				t.Errorf("room %+v", room)
			}
		})
	}
	// A role that may not read ConfigMaps: unknown, not an error.
	client := fake.NewClientset()
	client.PrependReactor("get", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, &forbidden{}
	})
	room, err := (&Migrator{Client: client}).localPathRoom(context.Background(), class("local-path", ""), "n1")
	if err != nil || room != nil {
		t.Errorf("forbidden: %+v, %v", room, err)
	}
}

// forbidden is the API server's 403.
type forbidden struct{}

func (forbidden) Error() string { return "forbidden" }
func (forbidden) Status() metav1.Status {
	return metav1.Status{Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden}
}

// TestObserveHostPath: the plan measures each directory a local-path class may use on the node
// the new volume is to be on (target_node), with the provider's ssh block (Measure); a failed
// measurement leaves the room unknown; an OpenEBS hostpath class's base path is measured as
// before.
func TestObserveHostPath(t *testing.T) {
	cm := localPathCM("kube-system", `{"nodePathMap":[{"node":"n2","paths":["/mnt/nvme","/mnt/ssd"]}]}`)
	lp := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "local-path"}, Provisioner: localPathProvisioner}
	measured := map[string]bool{}
	m := &Migrator{Client: fake.NewClientset(cm), Measure: func(_ context.Context, node, path string) (capacity.Filesystem, error) {
		measured[node+":"+path] = true
		if path == "/mnt/ssd" {
			return capacity.Filesystem{AvailableBytes: 2 << 30}, nil
		}
		return capacity.Filesystem{AvailableBytes: 1 << 30}, nil
	}}
	in := planInput{Class: lp, TargetNode: "n2", SourceNode: "n1", Unlimited: true}
	m.observeHostPath(context.Background(), &in)
	if h := in.HostPath; h == nil || len(h.Paths) != 2 || h.Paths[0].AvailableBytes != 1<<30 || h.Paths[1].AvailableBytes != 2<<30 || h.Node != "n2" || h.Quota {
		t.Errorf("room %+v", in.HostPath)
	}
	if !measured["n2:/mnt/nvme"] || !measured["n2:/mnt/ssd"] || len(measured) != 2 {
		t.Errorf("measured %v, want both directories on n2 (target_node)", measured)
	}
	m.Measure = func(context.Context, string, string) (capacity.Filesystem, error) {
		return capacity.Filesystem{}, errors.New("ssh: unreachable")
	}
	in.HostPath = nil
	m.observeHostPath(context.Background(), &in)
	if in.HostPath != nil {
		t.Errorf("a failed measurement: room %+v, want unknown", in.HostPath)
	}
	openebs := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "openebs-hostpath"}, Provisioner: catalog.OpenEBSLocalProvisioner}
	m.Measure = func(_ context.Context, node, path string) (capacity.Filesystem, error) {
		return capacity.Filesystem{AvailableBytes: 5}, nil
	}
	in = planInput{Class: openebs, Workloads: []volumes.Workload{{Kind: volumes.KindDeployment, Name: "w", Nodes: []string{"n4"}}}}
	m.observeHostPath(context.Background(), &in)
	if h := in.HostPath; h == nil || h.Node != "n4" || len(h.Paths) != 1 || h.Paths[0].Path != catalog.OpenEBSDefaultBasePath || h.Paths[0].AvailableBytes != 5 || !h.Quota {
		t.Errorf("OpenEBS hostpath on the workload's node: %+v", in.HostPath)
	}
}

// TestUsageScript: usage.sh measures a directory by du, and a filesystem's mount point by df.
func TestUsageScript(t *testing.T) {
	dir := t.TempDir()
	must(t, os.WriteFile(dir+"/a", make([]byte, 300<<10), 0o600))
	out, err := exec.Command("sh", "-c", usageScript, "usage.sh", dir).Output()
	must(t, err)
	u, err := parseUsage(string(out))
	if err != nil || u.How != "du" || u.Bytes < 300<<10 || u.Bytes > 400<<10 {
		t.Errorf("a directory: %q: %+v, %v", out, u, err)
	}
	out, err = exec.Command("sh", "-c", usageScript, "usage.sh", "/").Output()
	must(t, err)
	if u, err := parseUsage(string(out)); err != nil || u.How != "df" || u.Bytes <= 0 {
		t.Errorf("a mount point: %q: %+v, %v", out, u, err)
	}
	for _, bad := range []string{"", "du", "du x", "ls 5", "du -1"} {
		if _, err := parseUsage(bad); err == nil {
			t.Errorf("parseUsage(%q) passed", bad)
		}
	}
}
