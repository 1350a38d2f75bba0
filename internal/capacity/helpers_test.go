package capacity_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	tfjson "github.com/hashicorp/terraform-json"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/catalog"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/kube"
)

const addr = "data.clusterstorage_storage_capacity.test"

// env is one test's slice of the cluster: its own namespace and the node it measures.
type env struct {
	t      *testing.T
	client kubernetes.Interface
	node   string
	ns     string
}

func setup(t *testing.T) *env {
	t.Helper()
	client := acctest.Kube(t)
	return &env{t: t, client: client, node: acctest.Node(t), ns: acctest.Namespace(t, client, "acc-cap")}
}

// needRoot skips tests that mount filesystems when not run as root (CI runs as root).
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a loop device or tmpfs needs root")
	}
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// mount mounts with args onto a new directory mnt below dir and unmounts it when the test ends.
func mount(t *testing.T, mnt string, args ...string) {
	t.Helper()
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	run(t, "mount", append(args, mnt)...)
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v\n%s", mnt, err, out)
		}
	})
}

// loopExt4 makes an ext4 image of sizeMiB in dir, loop-mounts it at dir/ext4 and returns the
// mount point and the image. umount frees the loop device (mount -o loop sets autoclear).
func loopExt4(t *testing.T, dir string, sizeMiB int) (mnt, image string) {
	t.Helper()
	image = filepath.Join(dir, "ext4.img")
	run(t, "truncate", "-s", fmt.Sprintf("%dM", sizeMiB), image)
	run(t, "mkfs.ext4", "-q", "-F", image)
	mnt = filepath.Join(dir, "ext4")
	mount(t, mnt, "-o", "loop", image)
	return mnt, image
}

// df is GNU df's row for path: the numbers the data source must match.
type df struct {
	Source, FSType, Target                  string
	Size, Used, Avail, ITotal, IUsed, IFree int64
	Pcent, IPcent                           string
}

func dfOf(path string) (df, error) {
	out, err := exec.Command("df", "-B1", "--output=source,fstype,size,used,avail,pcent,itotal,iused,iavail,ipcent,target", path).Output()
	if err != nil {
		return df{}, fmt.Errorf("df %s: %w", path, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	f := strings.Fields(lines[len(lines)-1])
	if len(lines) != 2 || len(f) != 11 {
		return df{}, fmt.Errorf("df output %q", out)
	}
	var nums [6]int64
	for i, s := range []string{f[2], f[3], f[4], f[6], f[7], f[8]} {
		if nums[i], err = strconv.ParseInt(s, 10, 64); err != nil {
			return df{}, fmt.Errorf("df output %q: %w", out, err)
		}
	}
	return df{Source: f[0], FSType: f[1], Size: nums[0], Used: nums[1], Avail: nums[2], Pcent: f[5],
		ITotal: nums[3], IUsed: nums[4], IFree: nums[5], IPcent: f[9], Target: f[10]}, nil
}

// matchesDF checks filesystems[node] of the data source at address against df run now on dir.
func matchesDF(address, node, dir string) statecheck.StateCheck {
	return acctest.CheckValues(address, func(values map[string]any) error {
		want, err := dfOf(dir)
		if err != nil {
			return err
		}
		fss, _ := values["filesystems"].(map[string]any)
		fs, _ := fss[node].(map[string]any)
		if fs == nil {
			return fmt.Errorf("no filesystems[%q] in %v", node, values["filesystems"])
		}
		pct := func(v any) string {
			if v == nil {
				return "-"
			}
			return fmt.Sprintf("%d%%", int64(acctest.Number(v)))
		}
		got := df{
			Source: fmt.Sprint(fs["device"]), FSType: fmt.Sprint(fs["fs_type"]), Target: fmt.Sprint(fs["mount_point"]),
			Size: int64(acctest.Number(fs["size_bytes"])), Used: int64(acctest.Number(fs["used_bytes"])), Avail: int64(acctest.Number(fs["available_bytes"])),
			ITotal: int64(acctest.Number(fs["inodes_total"])), IUsed: int64(acctest.Number(fs["inodes_used"])), IFree: int64(acctest.Number(fs["inodes_free"])),
			Pcent: pct(fs["used_percent"]), IPcent: pct(fs["inodes_used_percent"]),
		}
		if got != want {
			return fmt.Errorf("filesystems[%q] differs from df %s:\n got %+v\nwant %+v", node, dir, got, want)
		}
		return nil
	})
}

// checkStatus checks the recorded result of the check block named name.
func checkStatus(name string, want tfjson.CheckStatus) statecheck.StateCheck {
	return acctest.CheckState(func(s *tfjson.State) error {
		if s == nil {
			return errors.New("no state")
		}
		for _, c := range s.Checks {
			if c.Address.Kind == tfjson.CheckKindCheckBlock && c.Address.Name == name {
				if c.Status != want {
					return fmt.Errorf("check %s: status %s, want %s (%+v)", name, c.Status, want, c.Instances)
				}
				return nil
			}
		}
		return fmt.Errorf("no result for check %s in state (%d results)", name, len(s.Checks))
	})
}

// dynamicClient is a dynamic client for the test cluster.
func dynamicClient(t *testing.T) dynamic.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", acctest.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	d, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// longhornCRD makes sure the cluster serves nodes.longhorn.io. A CRD that is there already (from
// a Longhorn install or another test) is used as it is and never changed or deleted; one this
// test installs (testdata/longhorn-nodes-crd.yaml) is deleted at the end unless objects of it
// remain that the test did not make.
func longhornCRD(t *testing.T, dyn dynamic.Interface) {
	t.Helper()
	ctx := context.Background()
	name := catalog.LonghornNodeGVR.GroupResource().String()
	_, err := dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		t.Logf("using the cluster's %s CRD", name)
	case apierrors.IsNotFound(err):
		text, rerr := os.ReadFile(filepath.Join("testdata", "longhorn-nodes-crd.yaml"))
		if rerr != nil {
			t.Fatal(rerr)
		}
		var obj map[string]any
		if err := yaml.Unmarshal(text, &obj); err != nil {
			t.Fatal(err)
		}
		_, err := dyn.Resource(crdGVR).Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
		switch {
		case apierrors.IsAlreadyExists(err):
			t.Logf("%s CRD appeared meanwhile: using it", name)
		case err != nil:
			t.Fatalf("creating the %s CRD: %v", name, err)
		default:
			t.Logf("installed the test's %s CRD", name)
			t.Cleanup(func() { removeLonghornCRD(t, dyn) })
		}
	default:
		t.Fatalf("reading the %s CRD: %v", name, err)
	}
	// Served once established: listing works.
	if err := kube.Poll(ctx, 200*time.Millisecond, time.Minute, name+" to be served", func(ctx context.Context) (bool, string, error) {
		_, err := dyn.Resource(catalog.LonghornNodeGVR).List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			return kube.KeepPolling(err)
		}
		return true, "", nil
	}); err != nil {
		t.Fatal(err)
	}
}

// removeLonghornCRD deletes the CRD this test installed, unless someone else's objects use it
// now. The test's own objects are in its namespace, deleted before (cleanups run last first).
func removeLonghornCRD(t *testing.T, dyn dynamic.Interface) {
	ctx := context.Background()
	err := kube.Poll(ctx, 200*time.Millisecond, time.Minute, "the test's Longhorn node objects to go", func(ctx context.Context) (bool, string, error) {
		list, err := dyn.Resource(catalog.LonghornNodeGVR).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		var others []string
		for _, item := range list.Items {
			if !strings.HasPrefix(item.GetNamespace(), "acc-cap-") {
				others = append(others, item.GetNamespace()+"/"+item.GetName())
			}
		}
		if len(others) > 0 {
			return false, "", fmt.Errorf("objects of others use it: %v", others)
		}
		return len(list.Items) == 0, fmt.Sprintf("%d left", len(list.Items)), nil
	})
	if err != nil {
		t.Logf("leaving the %s CRD in place: %v", catalog.LonghornNodeGVR.GroupResource(), err)
		return
	}
	label := "clusterstorage.io/test-fixture"
	crd, err := dyn.Resource(crdGVR).Get(ctx, catalog.LonghornNodeGVR.GroupResource().String(), metav1.GetOptions{})
	if err != nil || crd.GetLabels()[label] != "storage-capacity" {
		return
	}
	uid := crd.GetUID()
	if err := dyn.Resource(crdGVR).Delete(ctx, crd.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting the test's CRD: %v", err)
	}
}

// logSummary logs the summary of the data source at address, for a reader of the test output.
func logSummary(t *testing.T, address string) statecheck.StateCheck {
	return acctest.CheckValues(address, func(values map[string]any) error {
		t.Logf("%s summary:\n%v", address, values["summary"])
		return nil
	})
}

// matchesLsblk checks block_devices and disks of filesystems[node] against util-linux's lsblk,
// which reads the same sysfs on its own: `lsblk -s` lists a device and everything below it.
func matchesLsblk(address, node string) statecheck.StateCheck {
	return acctest.CheckValues(address, func(values map[string]any) error {
		fss, _ := values["filesystems"].(map[string]any)
		fs, _ := fss[node].(map[string]any)
		if fs == nil {
			return fmt.Errorf("no filesystems[%q]", node)
		}
		device := fmt.Sprint(fs["device"])
		out, err := exec.Command("lsblk", "-P", "-s", "-b", "-o", "KNAME,TYPE,ROTA,RO,RM,SIZE,MODEL", device).Output()
		if err != nil {
			return fmt.Errorf("lsblk %s: %w", device, err)
		}
		var names []any
		var disks []map[string]any
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			row := map[string]string{}
			for _, m := range regexp.MustCompile(`(\w+)="([^"]*)"`).FindAllStringSubmatch(line, -1) {
				row[m[1]] = m[2]
			}
			names = append(names, row["KNAME"])
			if row["TYPE"] == "disk" || row["TYPE"] == "loop" {
				size, err := strconv.ParseInt(row["SIZE"], 10, 64)
				if err != nil {
					return fmt.Errorf("lsblk size %q: %w", row["SIZE"], err)
				}
				disks = append(disks, map[string]any{
					"name": row["KNAME"], "rotational": row["ROTA"] == "1", "read_only": row["RO"] == "1",
					"removable": row["RM"] == "1", "size_bytes": size, "model": strings.TrimSpace(row["MODEL"]),
				})
			}
		}
		got, _ := fs["block_devices"].([]any)
		if fmt.Sprint(got) != fmt.Sprint(names) {
			return fmt.Errorf("block_devices %v, lsblk -s %s says %v", got, device, names)
		}
		gotDisks, _ := fs["disks"].([]any)
		if len(gotDisks) != len(disks) {
			return fmt.Errorf("disks %v, lsblk says %v", gotDisks, disks)
		}
		for i, want := range disks {
			d, _ := gotDisks[i].(map[string]any)
			model := ""
			if d["model"] != nil {
				model = fmt.Sprint(d["model"])
			}
			have := map[string]any{"name": d["name"], "rotational": d["rotational"], "read_only": d["read_only"],
				"removable": d["removable"], "size_bytes": int64(acctest.Number(d["size_bytes"])), "model": model}
			if fmt.Sprint(have) != fmt.Sprint(want) {
				return fmt.Errorf("disk %d: %v, lsblk says %v", i, have, want)
			}
		}
		return nil
	})
}
