package capacity

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func TestDevMajMin(t *testing.T) {
	for dev, want := range map[uint64]string{
		65024:          "254:0",    // /dev/vda: major 254, minor 0
		2049:           "8:1",      // /dev/sda1
		0x10301:        "259:1",    // blkext (NVMe partitions): a major above 255
		41:             "0:41",     // anonymous (tmpfs, btrfs subvolume)
		0x10000010012c: "4097:300", // major bits 12.. and minor bits 8.. live higher up
	} {
		if got := devMajMin(dev); got != want {
			t.Errorf("devMajMin(%#x) = %s, want %s", dev, got, want)
		}
	}
	// Cross-check with the kernel's own encoding of this machine's root device.
	var st syscall.Stat_t
	if err := syscall.Stat("/", &st); err != nil {
		t.Fatal(err)
	}
	info, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Skip("no /proc/self/mountinfo")
	}
	mounts, err := parseMountinfo(string(info))
	if err != nil {
		t.Fatal(err)
	}
	m, ok := findMount(mounts, "/", devMajMin(st.Dev))
	if !ok || m.MajMin != devMajMin(st.Dev) {
		t.Errorf("root mount %+v, st_dev %s", m, devMajMin(st.Dev))
	}
}

func TestParseMountinfo(t *testing.T) {
	text := `27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
28 27 0:25 / /mnt/with\040space ro,nosuid shared:5 master:1 - tmpfs my\134tmpfs ro,size=4k
29 27 0:26 / /var/lib/docker rw - overlay overlay
`
	got, err := parseMountinfo(text)
	if err != nil {
		t.Fatal(err)
	}
	want := []mountEntry{
		{MajMin: "254:0", MountPoint: "/", Options: "rw,relatime", FSType: "ext4", Source: "/dev/vda", SuperOptions: "rw,discard"},
		{MajMin: "0:25", MountPoint: "/mnt/with space", Options: "ro,nosuid", FSType: "tmpfs", Source: `my\tmpfs`, SuperOptions: "ro,size=4k"},
		{MajMin: "0:26", MountPoint: "/var/lib/docker", Options: "rw", FSType: "overlay", Source: "overlay"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if _, err := parseMountinfo("1 2 3"); err == nil {
		t.Error("a short line was accepted")
	}
}

func TestFindMount(t *testing.T) {
	mounts := []mountEntry{
		{MajMin: "254:0", MountPoint: "/"},
		{MajMin: "0:30", MountPoint: "/data"},
		{MajMin: "0:31", MountPoint: "/data"}, // mounted over the first /data
		{MajMin: "7:0", MountPoint: "/data2"},
		{MajMin: "0:40", MountPoint: "/data/sub"},
	}
	for _, c := range []struct{ path, dev, want string }{
		{"/", "254:0", "254:0"},
		{"/etc/hosts", "254:0", "254:0"},
		{"/data", "0:31", "0:31"},
		{"/data/x", "0:31", "0:31"},
		{"/data/x", "0:99", "0:31"},  // st_dev matches none: the top of the stack
		{"/data/x", "0:30", "0:30"},  // st_dev says which of the stacked mounts
		{"/data2/y", "7:0", "7:0"},   // /data is not a parent of /data2
		{"/datax", "254:0", "254:0"}, // nor of /datax
		{"/data/sub/z", "0:40", "0:40"},
	} {
		m, ok := findMount(mounts, c.path, c.dev)
		if !ok || m.MajMin != c.want {
			t.Errorf("findMount(%s, %s) = %s (%v), want %s", c.path, c.dev, m.MajMin, ok, c.want)
		}
	}
}

func TestSetStatfs(t *testing.T) {
	var f Filesystem
	// 4k fragments; 1000 blocks, 400 free, 350 available (50 reserved); 100 inodes, 99 free.
	f.setStatfs(4096, 1000, 400, 350, 100, 99)
	if f.SizeBytes != 4096000 || f.UsedBytes != 600*4096 || f.AvailableBytes != 350*4096 {
		t.Errorf("bytes: %+v", f)
	}
	// df: 600*100/(600+350) = 63.2 -> 64 (rounded up); inodes 1/100 -> 1.
	if *f.UsedPercent != 64 || *f.InodesUsedPercent != 1 || f.InodesUsed != 1 || f.InodesFree != 99 {
		t.Errorf("percent: used %d inodes %d", *f.UsedPercent, *f.InodesUsedPercent)
	}
	f.setStatfs(4096, 0, 0, 0, 0, 0)
	if f.UsedPercent != nil || f.InodesUsedPercent != nil {
		t.Error("an empty filesystem has no percentages (df prints -)")
	}
}

func TestParseBlock(t *testing.T) {
	out := "virt\tdm-0\tvg-root\npart\tsda3\ndisk\tsda\t1\t0\t0\t1953525168\t\tST1000DM010-2EP1  \n" +
		"part\tnvme0n1p2\ndisk\tnvme0n1\t0\t0\t0\t1000215216\t\tSamsung SSD 980 1TB\n"
	chain, disks, err := parseBlock([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"dm-0", "sda3", "sda", "nvme0n1p2", "nvme0n1"}; !reflect.DeepEqual(chain, want) {
		t.Errorf("chain %v, want %v", chain, want)
	}
	want := []Disk{
		{Name: "sda", Model: "ST1000DM010-2EP1", Rotational: true, SizeBytes: 1953525168 * 512},
		{Name: "nvme0n1", Model: "Samsung SSD 980 1TB", NVMe: true, SizeBytes: 1000215216 * 512},
	}
	if !reflect.DeepEqual(disks, want) {
		t.Errorf("disks %+v\nwant %+v", disks, want)
	}
	f := Filesystem{Disks: disks}
	if *f.Rotational() != true || *f.NVMe() != false {
		t.Error("an LVM volume spanning an HDD and an NVMe is rotational and not all NVMe")
	}
	if chain, disks, err := parseBlock([]byte("none\n")); err != nil || chain != nil || disks != nil {
		t.Errorf("none: %v %v %v", chain, disks, err)
	}
	if f := (Filesystem{}); f.Rotational() != nil || f.NVMe() != nil {
		t.Error("no disk: rotational and nvme must be null")
	}
	if _, _, err := parseBlock([]byte("disk\tsda\n")); err == nil {
		t.Error("a short disk line was accepted")
	}
}

func TestParseFSMissing(t *testing.T) {
	_, _, err := parseFS("/x", []byte("missing\n"))
	if !errors.Is(err, ErrPathMissing) || !strings.Contains(err.Error(), "/x") {
		t.Errorf("missing: %v", err)
	}
	_, _, err = parseFS("/x", []byte("missing dangling\n"))
	if !errors.Is(err, ErrPathMissing) || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("dangling: %v", err)
	}
	if _, _, err := parseFS("/x", []byte("garbage")); err == nil {
		t.Error("garbage accepted")
	}
}

// The scripts run here as they run on a node (sh -c script sh args...), on a tmpfs this test
// mounts, and agree with df.
func TestScriptsAgainstDF(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	mnt := filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=8m,nr_inodes=1000", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount: %v: %s", err, out)
		}
	})
	if err := os.WriteFile(filepath.Join(mnt, "f"), make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(mnt, link); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("sh", "-c", fsScript, "sh", link, "").Output()
	if err != nil {
		t.Fatal(err)
	}
	fs, mount, err := parseFS(link, out)
	if err != nil {
		t.Fatal(err)
	}
	if fs.ResolvedPath != mnt || fs.MountPoint != mnt || fs.FSType != "tmpfs" || !fs.Exists {
		t.Errorf("filesystem %+v", fs)
	}
	df := dfRow(t, mnt)
	want := []string{"tmpfs", "tmpfs", strconv.FormatInt(fs.SizeBytes, 10), strconv.FormatInt(fs.UsedBytes, 10),
		strconv.FormatInt(fs.AvailableBytes, 10), strconv.FormatInt(*fs.UsedPercent, 10) + "%",
		strconv.FormatInt(fs.InodesTotal, 10), strconv.FormatInt(fs.InodesUsed, 10), strconv.FormatInt(fs.InodesFree, 10),
		strconv.FormatInt(*fs.InodesUsedPercent, 10) + "%", mnt}
	if !reflect.DeepEqual(df, want) {
		t.Errorf("df says %v\nwe say  %v", df, want)
	}
	if fs.SizeBytes != 8<<20 || fs.UsedBytes != 1<<20 {
		t.Errorf("size %d used %d, want 8 MiB and 1 MiB", fs.SizeBytes, fs.UsedBytes)
	}
	out, err = exec.Command("sh", "-c", blockScript, "sh", mount.MajMin, mount.Source).Output()
	if err != nil {
		t.Fatal(err)
	}
	if chain, disks, err := parseBlock(out); err != nil || len(chain) != 0 || len(disks) != 0 {
		t.Errorf("a tmpfs has no block device: %v %v %v", chain, disks, err)
	}

	// A missing path, and a missing path measured at its nearest existing parent.
	out, err = exec.Command("sh", "-c", fsScript, "sh", filepath.Join(mnt, "no", "such"), "").Output()
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := parseFS("/x", out); !errors.Is(err, ErrPathMissing) {
		t.Errorf("missing path: %v", err)
	}
	out, err = exec.Command("sh", "-c", fsScript, "sh", filepath.Join(mnt, "no", "such"), "ancestor").Output()
	if err != nil {
		t.Fatal(err)
	}
	if fs, _, err := parseFS("/x", out); err != nil || fs.Exists || fs.ResolvedPath != mnt || fs.FSType != "tmpfs" {
		t.Errorf("ancestor: %+v %v", fs, err)
	}
}

// dfRow runs GNU df on path and returns its one row's fields.
func dfRow(t *testing.T, path string) []string {
	t.Helper()
	out, err := exec.Command("df", "-B1", "--output=source,fstype,size,used,avail,pcent,itotal,iused,iavail,ipcent,target", path).Output()
	if err != nil {
		t.Fatalf("df: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		t.Fatalf("df output %q", out)
	}
	return strings.Fields(lines[1])
}

// block.sh walks a tree laid out as the kernel lays out sysfs (Documentation/ABI/stable/sysfs-block:
// /sys/dev/block/<maj:min> links to the device's directory, a partition's directory sits in its
// disk's and holds a `partition` file, a device-mapper device lists what it is built on in
// `slaves/` and its name in `dm/name`): an LVM volume spanning a partition of a SATA disk and a
// partition of an NVMe namespace. This machine's kernel has no device-mapper, so no real LVM
// volume can be made here; the loop-device acceptance test walks the real sysfs.
func TestBlockScriptWalksLVM(t *testing.T) {
	root := t.TempDir()
	sata := filepath.Join(root, "devices/pci0000:00/0000:00:17.0/ata1/host0/target0:0:0/0:0:0:0/block/sda")
	nvme := filepath.Join(root, "devices/pci0000:00/0000:00:1d.0/0000:3d:00.0/nvme/nvme0/nvme0n1")
	dm := filepath.Join(root, "devices/virtual/block/dm-0")
	files := map[string]string{
		sata + "/queue/rotational": "1", sata + "/ro": "0", sata + "/removable": "0", sata + "/size": "1953525168",
		sata + "/device/model": "ST1000DM010-2EP1", sata + "/sda3/partition": "3",
		nvme + "/queue/rotational": "0", nvme + "/ro": "0", nvme + "/removable": "0", nvme + "/size": "1000215216",
		nvme + "/device/model": "Samsung SSD 980 1TB                     ", nvme + "/nvme0n1p2/partition": "2",
		dm + "/dm/name": "vg-data", dm + "/queue/rotational": "1",
	}
	for name, content := range files {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(content+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		root + "/dev/block/254:0": dm,
		dm + "/slaves/sda3":       sata + "/sda3",
		dm + "/slaves/nvme0n1p2":  nvme + "/nvme0n1p2",
		root + "/dev/block/259:2": nvme + "/nvme0n1p2",
		root + "/dev/block/8:0":   sata,
	}
	for name, target := range links {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		rel, err := filepath.Rel(filepath.Dir(name), target)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(rel, name); err != nil {
			t.Fatal(err)
		}
	}
	walk := func(majMin string) ([]string, []Disk) {
		t.Helper()
		out, err := exec.Command("sh", "-c", blockScript, "sh", majMin, "/dev/nonexistent", root).CombinedOutput()
		if err != nil {
			t.Fatalf("block.sh %s: %v\n%s", majMin, err, out)
		}
		chain, disks, err := parseBlock(out)
		if err != nil {
			t.Fatal(err)
		}
		return chain, disks
	}
	chain, disks := walk("254:0")
	if want := []string{"dm-0", "nvme0n1p2", "nvme0n1", "sda3", "sda"}; !reflect.DeepEqual(chain, want) {
		t.Errorf("chain %v, want %v", chain, want)
	}
	wantDisks := []Disk{
		{Name: "nvme0n1", Model: "Samsung SSD 980 1TB", NVMe: true, SizeBytes: 1000215216 * 512},
		{Name: "sda", Model: "ST1000DM010-2EP1", Rotational: true, SizeBytes: 1953525168 * 512},
	}
	if !reflect.DeepEqual(disks, wantDisks) {
		t.Errorf("disks %+v\nwant %+v", disks, wantDisks)
	}
	chain, disks = walk("259:2")
	if want := []string{"nvme0n1p2", "nvme0n1"}; !reflect.DeepEqual(chain, want) || len(disks) != 1 || disks[0].Rotational {
		t.Errorf("NVMe partition: chain %v disks %+v", chain, disks)
	}
	if chain, disks := walk("0:99"); chain != nil || disks != nil {
		t.Errorf("no such device: chain %v disks %+v", chain, disks)
	}
}

func TestParseFSImplausible(t *testing.T) {
	out := "exists yes\ndev 1\nstatfs 4096 9223372036854775807 1 1 1 1\nmountinfo\n1 2 0:1 / / rw - tmpfs t rw\nresolved\n/\n"
	if _, _, err := parseFS("/", []byte(out)); err == nil || !strings.Contains(err.Error(), "implausible") {
		t.Errorf("a size beyond int64 was accepted: %v", err)
	}
}
