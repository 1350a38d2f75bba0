package capacity_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tfjson "github.com/hashicorp/terraform-json"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/capacity"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/catalog"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/helm"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

// uninstallOnCleanup uninstalls release name in namespace ns when the test ends, without hooks,
// if the test's destroy left it (a failed step, a destroy the guard refused): the release's
// cluster-scoped objects (its class, cluster roles and bindings) outlive the test's namespace.
func uninstallOnCleanup(t *testing.T, name, ns string) {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", acctest.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	hc, err := helm.New(rc, helm.Options{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		// A release that is already gone is no error.
		if err := hc.Uninstall(ctx, name, ns, helm.UninstallOptions{Wait: true, Timeout: time.Minute, DisableHooks: true}); err != nil {
			t.Errorf("cleanup: uninstalling %s/%s: %v", ns, name, err)
		}
	})
}

// fsPath is the path of one attribute of filesystems[node].
func fsPath(node string, attr ...string) tfjsonpath.Path {
	p := tfjsonpath.New("filesystems").AtMapKey(node)
	for _, a := range attr {
		p = p.AtMapKey(a)
	}
	return p
}

// Real filesystems on the node (this machine, reached through a test sshd): a loop-mounted ext4,
// a tmpfs, a read-only tmpfs, a path through a symbolic link, each compared with df; check blocks
// that pass and fail on free space; then a missing path.
func TestAccStorageCapacity_nodePath(t *testing.T) {
	needRoot(t)
	e := setup(t)
	sshd := acctest.StartSSHD(t)
	dir := t.TempDir()
	ext4, image := loopExt4(t, dir, 64)
	if err := os.MkdirAll(filepath.Join(ext4, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	tmpfs := filepath.Join(dir, "tmpfs")
	mount(t, tmpfs, "-t", "tmpfs", "-o", "size=16m,nr_inodes=2000", "tmpfs")
	if err := os.WriteFile(filepath.Join(tmpfs, "f"), make([]byte, 3<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	ro := filepath.Join(dir, "ro")
	mount(t, ro, "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs")
	link := filepath.Join(dir, "link")
	if err := os.Symlink(filepath.Join(ext4, "data"), link); err != nil {
		t.Fatal(err)
	}
	loopDF, err := dfOf(ext4)
	if err != nil {
		t.Fatal(err)
	}
	loop := strings.TrimPrefix(loopDF.Source, "/dev/")
	rotational, err := os.ReadFile(filepath.Join("/sys/block", loop, "queue", "rotational"))
	if err != nil {
		t.Fatal(err)
	}
	loopRotational := strings.TrimSpace(string(rotational)) == "1"

	data := func(name, p string) string {
		return acctest.LoadConfig(t, "node_path_data.tf", name, p, e.node)
	}
	config := acctest.ProviderConfigSSH(sshd, e.node) + data("test", ext4) + data("tmpfs", tmpfs) + data("ro", ro) + data("link", link) + data("root", "/") +
		acctest.LoadConfig(t, "node_path.tf", e.node)
	steps := []resource.TestStep{
		{
			Config: config,
			ConfigStateChecks: []statecheck.StateCheck{
				logSummary(t, addr), logSummary(t, "data.clusterstorage_storage_capacity.tmpfs"),
				matchesDF(addr, e.node, ext4),
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("id"), knownvalue.StringExact("node_path:"+ext4)),
				statecheck.ExpectKnownValue(addr, fsPath(e.node, "fs_type"), knownvalue.StringExact("ext4")),
				statecheck.ExpectKnownValue(addr, fsPath(e.node, "mount_point"), knownvalue.StringExact(ext4)),
				statecheck.ExpectKnownValue(addr, fsPath(e.node, "read_only"), knownvalue.Bool(false)),
				statecheck.ExpectKnownValue(addr, fsPath(e.node, "block_devices"), knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact(loop)})),
				statecheck.ExpectKnownValue(addr, fsPath(e.node, "disks").AtSliceIndex(0).AtMapKey("backing_file"), knownvalue.StringExact(image)),
				statecheck.ExpectKnownValue(addr, fsPath(e.node, "disks").AtSliceIndex(0).AtMapKey("rotational"), knownvalue.Bool(loopRotational)),
				statecheck.ExpectKnownValue(addr, fsPath(e.node, "disks").AtSliceIndex(0).AtMapKey("nvme"), knownvalue.Bool(false)),
				statecheck.ExpectKnownValue(addr, fsPath(e.node, "disks").AtSliceIndex(0).AtMapKey("size_bytes"), knownvalue.Int64Exact(64<<20)),
				statecheck.ExpectKnownValue(addr, fsPath(e.node, "rotational"), knownvalue.Bool(loopRotational)),
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("totals").AtMapKey("nodes"), knownvalue.Int64Exact(1)),
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("totals").AtMapKey("min_available_node"), knownvalue.StringExact(e.node)),
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("summary"), knownvalue.StringRegexp(acctest.ErrorRegexp(e.node+`: .*ext4.* on /dev/`+loop+` \(ext4 at `+ext4))),
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("storage_class"), knownvalue.Null()),
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("capacity_sources"), knownvalue.Null()),

				matchesDF("data.clusterstorage_storage_capacity.tmpfs", e.node, tmpfs),
				statecheck.ExpectKnownValue("data.clusterstorage_storage_capacity.tmpfs", fsPath(e.node, "size_bytes"), knownvalue.Int64Exact(16<<20)),
				statecheck.ExpectKnownValue("data.clusterstorage_storage_capacity.tmpfs", fsPath(e.node, "used_bytes"), knownvalue.Int64Exact(3<<20)),
				statecheck.ExpectKnownValue("data.clusterstorage_storage_capacity.tmpfs", fsPath(e.node, "block_devices"), knownvalue.ListExact(nil)),
				statecheck.ExpectKnownValue("data.clusterstorage_storage_capacity.tmpfs", fsPath(e.node, "disks"), knownvalue.ListExact(nil)),
				statecheck.ExpectKnownValue("data.clusterstorage_storage_capacity.tmpfs", fsPath(e.node, "rotational"), knownvalue.Null()),
				statecheck.ExpectKnownValue("data.clusterstorage_storage_capacity.tmpfs", fsPath(e.node, "nvme"), knownvalue.Null()),

				matchesDF("data.clusterstorage_storage_capacity.ro", e.node, ro),
				statecheck.ExpectKnownValue("data.clusterstorage_storage_capacity.ro", fsPath(e.node, "read_only"), knownvalue.Bool(true)),

				matchesDF("data.clusterstorage_storage_capacity.link", e.node, ext4),
				matchesLsblk(addr, e.node),
				// The root filesystem changes while the test runs: its disk is compared, not its numbers.
				matchesLsblk("data.clusterstorage_storage_capacity.root", e.node),
				logSummary(t, "data.clusterstorage_storage_capacity.root"),
				statecheck.ExpectKnownValue("data.clusterstorage_storage_capacity.link", fsPath(e.node, "path"), knownvalue.StringExact(link)),
				statecheck.ExpectKnownValue("data.clusterstorage_storage_capacity.link", fsPath(e.node, "resolved_path"), knownvalue.StringExact(filepath.Join(ext4, "data"))),
				statecheck.ExpectKnownValue("data.clusterstorage_storage_capacity.link", fsPath(e.node, "exists"), knownvalue.Bool(true)),

				// 64 MiB of ext4 has far less than 1 GiB free; 16 MiB of tmpfs with 3 MiB used has more than 8.
				checkStatus("ext4_has_1g_free", tfjson.CheckStatusFail),
				checkStatus("tmpfs_has_8m_free", tfjson.CheckStatusPass),
			},
		},
		{
			Config:      acctest.ProviderConfigSSH(sshd, e.node) + data("test", filepath.Join(dir, "missing")),
			ExpectError: acctest.ErrorRegexp(`On node "` + e.node + `", .*/missing: path does not exist: create it`),
		},
		{
			Config:      acctest.ProviderConfigSSH(sshd, e.node) + data("test", filepath.Join(dir, "dangling")),
			PreConfig:   func() { _ = os.Symlink(filepath.Join(dir, "nowhere"), filepath.Join(dir, "dangling")) }, //nolint:errcheck // the step fails when the link is missing
			ExpectError: acctest.ErrorRegexp(`symbolic link to a path that does not exist`),
		},
	}
	// Without `nodes`, every node is measured: only when the test's sshd can stand for all of
	// them, on a single-node cluster.
	nodes, err := e.client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) == 1 {
		steps = append(steps, resource.TestStep{
			Config: acctest.ProviderConfigSSH(sshd, e.node) + fmt.Sprintf("data \"clusterstorage_storage_capacity\" \"test\" {\n  node_path = %q\n}\n", tmpfs),
			ConfigStateChecks: []statecheck.StateCheck{
				matchesDF(addr, e.node, tmpfs),
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("totals").AtMapKey("nodes"), knownvalue.Int64Exact(1)),
			},
		})
	} else {
		t.Logf("%d nodes: not measuring all nodes (the test's sshd stands for %s only)", len(nodes.Items), e.node)
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps:                    steps,
	})
}

// Preconditions as the examples write them: a k3s data dir migration whose target lacks space is
// stopped at plan, before the resource does anything; a target on a rotational disk is refused.
func TestAccStorageCapacity_preconditions(t *testing.T) {
	needRoot(t)
	e := setup(t)
	sshd := acctest.StartSSHD(t)
	dir := t.TempDir()
	ext4, _ := loopExt4(t, dir, 32)
	loopDF, err := dfOf(ext4)
	if err != nil {
		t.Fatal(err)
	}
	rotational, err := os.ReadFile(filepath.Join("/sys/block", strings.TrimPrefix(loopDF.Source, "/dev/"), "queue", "rotational"))
	if err != nil {
		t.Fatal(err)
	}
	target := acctest.LoadConfig(t, "preconditions.tf", ext4, e.node)
	migration := target + acctest.LoadConfig(t, "preconditions_2.tf", e.node, ext4)
	steps := []resource.TestStep{{
		Config:      acctest.ProviderConfigSSH(sshd, e.node) + migration,
		PlanOnly:    true,
		ExpectError: acctest.ErrorRegexp(`Not enough space on the target: node_path ` + ext4),
	}}
	notRotational := target + acctest.LoadConfig(t, "preconditions_3.tf", e.node)
	if strings.TrimSpace(string(rotational)) == "1" {
		steps = append(steps, resource.TestStep{
			Config: acctest.ProviderConfigSSH(sshd, e.node) + notRotational, PlanOnly: true,
			ExpectError: acctest.ErrorRegexp(`The target is on a rotational disk.`),
		})
	} else {
		steps = append(steps, resource.TestStep{Config: acctest.ProviderConfigSSH(sshd, e.node) + notRotational})
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps:                    steps,
	})
}

// A kubernetes.io/no-provisioner class: its Available volumes count, per node by node affinity;
// a Bound one does not. A class with CSIStorageCapacity objects: summed per topology segment. A
// class with neither: explicit nulls.
func TestAccStorageCapacity_storageClass(t *testing.T) {
	acctest.RunsUnder(t, acctest.EveryCLI)
	e := setup(t)
	ctx := context.Background()
	local := e.class(capacity.NoProvisioner)
	other := acctest.RandomName("acc-cap-elsewhere")
	e.localPV(local, "1Gi", e.node)
	e.localPV(local, "3Gi", e.node)
	e.localPV(local, "2Gi", other)
	bound := e.localPV(local, "5Gi", e.node)
	e.bind(local, bound)

	csi := e.class("csi.acc.clusterstorage.io")
	hostname := &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/hostname": e.node}}
	zone := &metav1.LabelSelector{MatchLabels: map[string]string{"topology.kubernetes.io/zone": "acc-zone-nowhere"}}
	e.csiCapacity(csi, hostname, "10Gi", "4Gi")
	e.csiCapacity(csi, hostname, "5Gi", "")
	e.csiCapacity(csi, zone, "7Gi", "6Gi")
	none := e.class("none.acc.clusterstorage.io")
	if _, err := e.client.CoreV1().Nodes().Get(ctx, e.node, metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}

	data := func(class string) string {
		return acctest.ProviderConfig() + fmt.Sprintf("data \"clusterstorage_storage_capacity\" \"test\" {\n  storage_class = %q\n}\n", class)
	}
	gi := func(n int64) knownvalue.Check { return knownvalue.Int64Exact(n << 30) }
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: data(local),
				ConfigStateChecks: []statecheck.StateCheck{
					logSummary(t, addr),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("class_provisioner"), knownvalue.StringExact(capacity.NoProvisioner)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("capacity_sources"), knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("available_volumes")})),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("available_volumes"), knownvalue.ObjectExact(map[string]knownvalue.Check{
						"count": knownvalue.Int64Exact(3), "total_bytes": gi(6), "largest_bytes": gi(3),
						"nodes": knownvalue.MapExact(map[string]knownvalue.Check{e.node: knownvalue.ObjectExact(map[string]knownvalue.Check{
							"count": knownvalue.Int64Exact(2), "total_bytes": gi(4), "largest_bytes": gi(3),
						})}),
					})),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("csi_storage_capacity"), knownvalue.Null()),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("filesystems"), knownvalue.Null()),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("totals"), knownvalue.Null()),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("summary"), knownvalue.StringRegexp(acctest.ErrorRegexp(`Available volumes: 3, 6.0 GiB in total, largest 3.0 GiB; `+e.node+`: 2 \(4.0 GiB`))),
				},
			},
			{
				Config: data(csi),
				ConfigStateChecks: []statecheck.StateCheck{
					logSummary(t, addr),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("capacity_sources"), knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("csi_storage_capacity")})),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("available_volumes"), knownvalue.Null()),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("csi_storage_capacity"), knownvalue.ObjectExact(map[string]knownvalue.Check{
						"capacity_bytes": gi(22), "maximum_volume_size_bytes": gi(6),
						"segments": knownvalue.ListExact([]knownvalue.Check{
							knownvalue.ObjectExact(map[string]knownvalue.Check{
								"selector":       knownvalue.StringExact("kubernetes.io/hostname=" + e.node),
								"match_labels":   knownvalue.MapExact(map[string]knownvalue.Check{"kubernetes.io/hostname": knownvalue.StringExact(e.node)}),
								"nodes":          knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact(e.node)}),
								"capacity_bytes": gi(15), "maximum_volume_size_bytes": gi(4), "objects": knownvalue.Int64Exact(2),
							}),
							knownvalue.ObjectExact(map[string]knownvalue.Check{
								"selector":       knownvalue.StringExact("topology.kubernetes.io/zone=acc-zone-nowhere"),
								"match_labels":   knownvalue.MapExact(map[string]knownvalue.Check{"topology.kubernetes.io/zone": knownvalue.StringExact("acc-zone-nowhere")}),
								"nodes":          knownvalue.ListExact(nil),
								"capacity_bytes": gi(7), "maximum_volume_size_bytes": gi(6), "objects": knownvalue.Int64Exact(1),
							}),
						}),
					})),
				},
			},
			{
				Config: data(none),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("capacity_sources"), knownvalue.ListExact(nil)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("csi_storage_capacity"), knownvalue.Null()),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("available_volumes"), knownvalue.Null()),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("summary"), knownvalue.StringRegexp(acctest.ErrorRegexp(`publishes no capacity`))),
				},
			},
			{
				Config:      data("acc-cap-no-such-class"),
				ExpectError: acctest.ErrorRegexp(`no storage class "acc-cap-no-such-class"; it has: .*` + local),
			},
		},
	})
}

// Longhorn's node objects, created through the API as Longhorn's manager would: disks with and
// without reported status; nodes picked by name; a node Longhorn does not have; a namespace
// without Longhorn.
func TestAccStorageCapacity_longhorn(t *testing.T) {
	e := setup(t)
	dyn := dynamicClient(t)
	longhornCRD(t, dyn)
	ctx := context.Background()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "longhorn.io/v1beta2", "kind": "Node",
		"metadata": map[string]any{"name": e.node, "namespace": e.ns},
		"spec": map[string]any{"allowScheduling": true, "name": e.node, "disks": map[string]any{
			"default-disk-1": map[string]any{"path": "/var/lib/longhorn/", "allowScheduling": true, "storageReserved": int64(30 << 30), "diskType": "filesystem"},
			"nvme-disk":      map[string]any{"path": "/mnt/nvme", "allowScheduling": false, "storageReserved": int64(0), "diskType": "filesystem"},
		}},
	}}
	res := dyn.Resource(catalog.LonghornNodeGVR).Namespace(e.ns)
	created, err := res.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the Longhorn node object: %v", err)
	}
	t.Cleanup(func() {
		_ = res.Delete(context.Background(), e.node, metav1.DeleteOptions{}) //nolint:errcheck // best effort; the namespace goes too
	})
	created.Object["status"] = map[string]any{
		"conditions": []any{
			map[string]any{"type": "Ready", "status": "True"},
			map[string]any{"type": "Schedulable", "status": "True"},
		},
		"diskStatus": map[string]any{"default-disk-1": map[string]any{
			"diskPath": "/var/lib/longhorn/", "storageMaximum": int64(100 << 30), "storageAvailable": int64(60 << 30), "storageScheduled": int64(25 << 30),
			"conditions": []any{map[string]any{"type": "Ready", "status": "True"}, map[string]any{"type": "Schedulable", "status": "False"}},
		}},
	}
	if _, err := res.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("setting the Longhorn node's status: %v", err)
	}
	empty := setup(t)
	// A namespace whose Longhorn knows another node only.
	ghost := setup(t)
	ghostNode := acctest.RandomName("acc-cap-ghost")
	if _, err := dyn.Resource(catalog.LonghornNodeGVR).Namespace(ghost.ns).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "longhorn.io/v1beta2", "kind": "Node",
		"metadata": map[string]any{"name": ghostNode, "namespace": ghost.ns},
		"spec":     map[string]any{"allowScheduling": true},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = dyn.Resource(catalog.LonghornNodeGVR).Namespace(ghost.ns).Delete(context.Background(), ghostNode, metav1.DeleteOptions{}) //nolint:errcheck // best effort
	})

	data := func(body string) string {
		return acctest.ProviderConfig() + "data \"clusterstorage_storage_capacity\" \"test\" {\n" + body + "\n}\n"
	}
	backend := fmt.Sprintf("  backend = { type = \"longhorn\", namespace = %q }\n", e.ns)
	gi := func(n int64) knownvalue.Check { return knownvalue.Int64Exact(n << 30) }
	node := tfjsonpath.New("longhorn_nodes").AtMapKey(e.node)
	checks := []statecheck.StateCheck{
		logSummary(t, addr),
		statecheck.ExpectKnownValue(addr, tfjsonpath.New("id"), knownvalue.StringExact("backend:longhorn/"+e.ns)),
		statecheck.ExpectKnownValue(addr, node.AtMapKey("ready"), knownvalue.Bool(true)),
		statecheck.ExpectKnownValue(addr, node.AtMapKey("storage_maximum_bytes"), gi(100)),
		statecheck.ExpectKnownValue(addr, node.AtMapKey("storage_available_bytes"), gi(60)),
		statecheck.ExpectKnownValue(addr, node.AtMapKey("storage_scheduled_bytes"), gi(25)),
		statecheck.ExpectKnownValue(addr, node.AtMapKey("storage_reserved_bytes"), gi(30)),
		statecheck.ExpectKnownValue(addr, node.AtMapKey("disks").AtMapKey("default-disk-1"), knownvalue.ObjectExact(map[string]knownvalue.Check{
			"path": knownvalue.StringExact("/var/lib/longhorn/"), "allow_scheduling": knownvalue.Bool(true), "storage_reserved_bytes": gi(30),
			"storage_maximum_bytes": gi(100), "storage_available_bytes": gi(60), "storage_scheduled_bytes": gi(25),
			"ready": knownvalue.Bool(true), "schedulable": knownvalue.Bool(false),
		})),
		// Not reported yet: explicit nulls, not zeros.
		statecheck.ExpectKnownValue(addr, node.AtMapKey("disks").AtMapKey("nvme-disk"), knownvalue.ObjectExact(map[string]knownvalue.Check{
			"path": knownvalue.StringExact("/mnt/nvme"), "allow_scheduling": knownvalue.Bool(false), "storage_reserved_bytes": knownvalue.Int64Exact(0),
			"storage_maximum_bytes": knownvalue.Null(), "storage_available_bytes": knownvalue.Null(), "storage_scheduled_bytes": knownvalue.Null(),
			"ready": knownvalue.Null(), "schedulable": knownvalue.Null(),
		})),
		statecheck.ExpectKnownValue(addr, tfjsonpath.New("totals"), knownvalue.ObjectExact(map[string]knownvalue.Check{
			"nodes": knownvalue.Int64Exact(1), "size_bytes": gi(100), "used_bytes": gi(40), "available_bytes": gi(60),
			"min_available_bytes": gi(60), "min_available_node": knownvalue.StringExact(e.node), "scheduled_bytes": gi(25),
		})),
		statecheck.ExpectKnownValue(addr, tfjsonpath.New("filesystems"), knownvalue.Null()),
	}
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{
			{Config: data(backend), ConfigStateChecks: checks},
			{Config: data(backend + fmt.Sprintf("  nodes = [%q]\n", e.node)), ConfigStateChecks: checks},
			{
				Config:      data(backend + "  nodes = [\"acc-cap-no-such-node\"]\n"),
				ExpectError: acctest.ErrorRegexp(`node "acc-cap-no-such-node" not found in the cluster; its nodes are: .*` + e.node),
			},
			{
				Config:      data(fmt.Sprintf("  backend = { type = \"longhorn\", namespace = %q }\n  nodes = [%q]\n", ghost.ns, e.node)),
				ExpectError: acctest.ErrorRegexp(`Longhorn in namespace ` + ghost.ns + ` has no node object for "` + e.node + `" \(it has: ` + ghostNode + `\)`),
			},
			{
				Config:      data(fmt.Sprintf("  backend = { type = \"longhorn\", namespace = %q }\n", empty.ns)),
				ExpectError: acctest.ErrorRegexp(`namespace ` + empty.ns + ` has no nodes.longhorn.io objects`),
			},
		},
	})
}

// OpenEBS hostpath: the base path from the release's hostpath class annotation, measured over
// SSH at its nearest existing parent (a tmpfs) because the provisioner has not made it yet.
func TestAccStorageCapacity_openEBS(t *testing.T) {
	needRoot(t)
	e := setup(t)
	sshd := acctest.StartSSHD(t)
	dir := t.TempDir()
	tmpfs := filepath.Join(dir, "tmpfs")
	mount(t, tmpfs, "-t", "tmpfs", "-o", "size=24m", "tmpfs")
	base := filepath.Join(tmpfs, "openebs", "local")
	class := acctest.RandomName("acc-cap-hostpath")
	_, err := e.client.StorageV1().StorageClasses().Create(context.Background(), &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{Name: class, Annotations: map[string]string{
			// As openebs/dynamic-localpv-provisioner's hostpath-class.yaml renders it, and as Helm marks a release's objects.
			"openebs.io/cas-type":            "local",
			catalog.OpenEBSConfigAnnotation:  fmt.Sprintf("- name: StorageType\n  value: \"hostpath\"\n- name: BasePath\n  value: %q\n", base),
			"meta.helm.sh/release-name":      "openebs",
			"meta.helm.sh/release-namespace": e.ns,
		}, Labels: map[string]string{"app.kubernetes.io/managed-by": "Helm"}},
		Provisioner: catalog.OpenEBSLocalProvisioner,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.client.StorageV1().StorageClasses().Delete(context.Background(), class, metav1.DeleteOptions{}) //nolint:errcheck // best effort
	})
	data := func(ns, extra string) string {
		return acctest.ProviderConfigSSH(sshd, e.node) + fmt.Sprintf("data \"clusterstorage_storage_capacity\" \"test\" {\n  backend = { type = \"openebs\", namespace = %q%s }\n  nodes = [%q]\n}\n", ns, extra, e.node)
	}
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: data(e.ns, ""),
				ConfigStateChecks: []statecheck.StateCheck{
					logSummary(t, addr),
					matchesDF(addr, e.node, tmpfs),
					statecheck.ExpectKnownValue(addr, fsPath(e.node, "path"), knownvalue.StringExact(base)),
					statecheck.ExpectKnownValue(addr, fsPath(e.node, "exists"), knownvalue.Bool(false)),
					statecheck.ExpectKnownValue(addr, fsPath(e.node, "resolved_path"), knownvalue.StringExact(tmpfs)),
					statecheck.ExpectKnownValue(addr, fsPath(e.node, "size_bytes"), knownvalue.Int64Exact(24<<20)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("totals").AtMapKey("available_bytes"), knownvalue.Int64Exact(24<<20)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("summary"), knownvalue.StringRegexp(acctest.ErrorRegexp(`not made yet; measured at `+tmpfs))),
				},
			},
			{
				// base_path overrides the class: the tmpfs itself, which exists.
				Config: data(e.ns, fmt.Sprintf(", base_path = %q", tmpfs)),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, fsPath(e.node, "exists"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue(addr, fsPath(e.node, "fs_type"), knownvalue.StringExact("tmpfs")),
				},
			},
			{
				Config:      data("acc-cap-no-openebs", ""),
				ExpectError: acctest.ErrorRegexp(`no OpenEBS hostpath storage class .* belongs to a Helm release in namespace acc-cap-no-openebs`),
			},
		},
	})
}

// The whole flow a user writes: OpenEBS installed by clusterstorage_storage_backend from the
// fixture chart repository (the 4.4.0 layout: its hostpath class as the real chart renders it,
// marked by Helm as the release's), and the data source pointed at that backend.
func TestAccStorageCapacity_openEBSRelease(t *testing.T) {
	needRoot(t)
	e := setup(t)
	if !acctest.LocalCluster() {
		t.Skip("the fixture charts' pods use images only the project's local cluster has")
	}
	sshd := acctest.StartSSHD(t)
	repo := acctest.StartChartRepo(t, acctest.ChartsDir())
	tmpfs := filepath.Join(t.TempDir(), "tmpfs")
	mount(t, tmpfs, "-t", "tmpfs", "-o", "size=20m", "tmpfs")
	base := filepath.Join(tmpfs, "openebs")
	if err := os.Mkdir(base, 0o755); err != nil {
		t.Fatal(err)
	}
	class := acctest.RandomName("acc-cap-hostpath")
	uninstallOnCleanup(t, "openebs", e.ns)
	config := acctest.ProviderConfigSSH(sshd, e.node) + acctest.LoadConfig(t, "openebs_release.tf", repo, e.ns, class, base, e.node)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps: []resource.TestStep{{
			Config: config,
			ConfigStateChecks: []statecheck.StateCheck{
				logSummary(t, addr),
				matchesDF(addr, e.node, tmpfs),
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("id"), knownvalue.StringExact("backend:openebs/"+e.ns)),
				statecheck.ExpectKnownValue(addr, fsPath(e.node, "path"), knownvalue.StringExact(base)),
				statecheck.ExpectKnownValue(addr, fsPath(e.node, "exists"), knownvalue.Bool(true)),
				statecheck.ExpectKnownValue(addr, fsPath(e.node, "fs_type"), knownvalue.StringExact("tmpfs")),
			},
		}},
	})
}

// Bad input is refused at plan, with the attribute named.
func TestAccStorageCapacity_badInput(t *testing.T) {
	acctest.Kube(t)
	cases := []struct{ body, want string }{
		{`storage_class = "a"
  node_path = "/x"`, `Set exactly one of node_path, storage_class and backend \(set: node_path, storage_class\)`},
		{`nodes = ["a"]`, `Set exactly one of node_path, storage_class and backend \(set: none\)`},
		{`node_path = "relative"`, `"relative" must be an absolute path`},
		{`storage_class = "a"
  nodes = ["n"]`, `nodes applies to node_path and backend only`},
		{`node_path = "/x"
  nodes = []`, `nodes list must contain at least 1 elements`},
		{`node_path = "/x"
  nodes = ["a", "a"]`, `This attribute contains duplicate values`},
		{`backend = { type = "ceph", namespace = "x" }`, `value must be one of`},
		{`backend = { type = "longhorn", namespace = "Not_A_Name" }`, `backend.namespace = "Not_A_Name" is not valid: a lowercase RFC 1123 subdomain`},
		{`backend = { type = "longhorn", namespace = "lh", base_path = "/x" }`, `base_path names the OpenEBS hostpath directory`},
		{`storage_class = "Not_A_Name"`, `storage_class = "Not_A_Name" is not valid: a lowercase RFC 1123 subdomain`},
	}
	steps := make([]resource.TestStep, 0, len(cases)+1)
	for _, c := range cases {
		steps = append(steps, resource.TestStep{
			Config:      acctest.ProviderConfig() + "data \"clusterstorage_storage_capacity\" \"test\" {\n  " + c.body + "\n}\n",
			ExpectError: acctest.ErrorRegexp(c.want),
			PlanOnly:    true,
		})
	}
	// A node path without the provider's ssh block says what to add.
	steps = append(steps, resource.TestStep{
		Config:      acctest.ProviderConfig() + fmt.Sprintf("data \"clusterstorage_storage_capacity\" \"test\" {\n  node_path = \"/\"\n  nodes = [%q]\n}\n", acctest.Node(t)),
		ExpectError: acctest.ErrorRegexp(`the provider has no ssh block: add .ssh`),
		PlanOnly:    true,
	})
	// An unknown node is refused while planning too (the data source is read during plan).
	steps = append(steps, resource.TestStep{
		Config:      acctest.ProviderConfig() + "data \"clusterstorage_storage_capacity\" \"test\" {\n  node_path = \"/\"\n  nodes = [\"acc-cap-no-such-node\"]\n}\n",
		ExpectError: acctest.ErrorRegexp(`Unknown node.*node "acc-cap-no-such-node" not found in the cluster`),
		PlanOnly:    true,
	})
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProviderFactories,
		Steps:                    steps,
	})
}

// class makes a StorageClass with provisioner, deleted when the test ends.
func (e *env) class(provisioner string) string {
	name := acctest.RandomName("acc-cap-sc")
	mode := storagev1.VolumeBindingWaitForFirstConsumer
	if _, err := e.client.StorageV1().StorageClasses().Create(context.Background(), &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: provisioner, VolumeBindingMode: &mode,
	}, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("creating storage class: %v", err)
	}
	e.t.Cleanup(func() {
		_ = e.client.StorageV1().StorageClasses().Delete(context.Background(), name, metav1.DeleteOptions{}) //nolint:errcheck // best effort
	})
	return name
}

// localPV makes a local volume of class and size on node (by hostname), and waits until it is Available.
func (e *env) localPV(class, size, node string) string {
	name := acctest.RandomName("acc-cap-pv")
	_, err := e.client.CoreV1().PersistentVolumes().Create(context.Background(), &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: k8sresource.MustParse(size)},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              class,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/mnt/" + name}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
			}}}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("creating local volume: %v", err)
	}
	e.t.Cleanup(func() {
		_ = e.client.CoreV1().PersistentVolumes().Delete(context.Background(), name, metav1.DeleteOptions{}) //nolint:errcheck // best effort
	})
	e.waitPhase(name, corev1.VolumeAvailable)
	return name
}

// bind binds the volume pv to a new claim in the test's namespace and waits until it is Bound.
func (e *env) bind(class, pv string) {
	_, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Create(context.Background(), &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: acctest.RandomName("acc-cap-pvc")},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: &class, VolumeName: pv,
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: k8sresource.MustParse("1Gi")}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("creating claim: %v", err)
	}
	e.waitPhase(pv, corev1.VolumeBound)
}

func (e *env) waitPhase(pv string, phase corev1.PersistentVolumePhase) {
	if err := kube.Poll(context.Background(), 100*time.Millisecond, time.Minute, "volume "+pv+" to be "+string(phase), func(ctx context.Context) (bool, string, error) {
		v, err := e.client.CoreV1().PersistentVolumes().Get(ctx, pv, metav1.GetOptions{})
		if err != nil {
			return kube.KeepPolling(err)
		}
		return v.Status.Phase == phase, "phase " + string(v.Status.Phase), nil
	}); err != nil {
		e.t.Fatal(err)
	}
}

// csiCapacity publishes a CSIStorageCapacity object for class in the test's namespace, as a CSI
// driver's external-provisioner does.
func (e *env) csiCapacity(class string, topology *metav1.LabelSelector, capacityQ, maxVolume string) {
	c := &storagev1.CSIStorageCapacity{
		ObjectMeta:       metav1.ObjectMeta{GenerateName: "csisc-"},
		StorageClassName: class, NodeTopology: topology,
	}
	q := k8sresource.MustParse(capacityQ)
	c.Capacity = &q
	if maxVolume != "" {
		m := k8sresource.MustParse(maxVolume)
		c.MaximumVolumeSize = &m
	}
	if _, err := e.client.StorageV1().CSIStorageCapacities(e.ns).Create(context.Background(), c, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("creating CSIStorageCapacity: %v", err)
	}
}
