package k3smigration

import (
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"
)

func TestCheckPaths(t *testing.T) {
	cases := []struct{ source, target, want string }{
		{"/var/lib/rancher/k3s", "/mnt/nvme/k3s", ""},
		{"/var/lib/rancher/k3s", "/var/lib/rancher/k3s2", ""},
		{"var/lib/rancher/k3s", "/mnt/k3s", "must be an absolute path"},
		{"/var/lib/rancher/k3s", "mnt", "must be an absolute path"},
		{"/var/lib/rancher/k3s/", "/mnt/k3s", "must be a clean path"},
		{"/var/lib/rancher/../k3s", "/mnt/k3s", "must be a clean path"},
		{"/var/lib/rancher/k3s", "/var/lib/rancher/k3s", "are the same path"},
		{"/var/lib/rancher/k3s", "/var/lib/rancher/k3s/new", "is inside source"},
		{"/mnt/nvme/k3s/inner", "/mnt/nvme/k3s", "is inside target"},
		{"/var/lib/rancher/k3s", "/", "system directory"},
		{"/var", "/mnt/k3s", "system directory"},
	}
	for _, c := range cases {
		err := CheckPaths(c.source, c.target)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("CheckPaths(%q, %q) = %v, want %q", c.source, c.target, err, c.want)
		}
	}
}

func TestSetDataDir(t *testing.T) {
	cases := []struct{ in, dir, want string }{
		{"", "/mnt/k3s", "data-dir: \"/mnt/k3s\"\n"},
		{"# settings\nwrite-kubeconfig-mode: \"0644\"", "/mnt/k3s", "# settings\nwrite-kubeconfig-mode: \"0644\"\ndata-dir: \"/mnt/k3s\"\n"},
		{"data-dir: /old\ntls-san:\n  - a\n", "/mnt/k3s", "data-dir: \"/mnt/k3s\"\ntls-san:\n  - a\n"},
		{"\"data-dir\" : '/old'\n", "/mnt/with space", "data-dir: \"/mnt/with space\"\n"},
	}
	for _, c := range cases {
		got, err := setDataDir([]byte(c.in), c.dir)
		if err != nil || string(got) != c.want {
			t.Errorf("setDataDir(%q, %q) = %q, %v; want %q", c.in, c.dir, got, err, c.want)
		}
		if dataDir(got) != c.dir {
			t.Errorf("dataDir(%q) = %q", got, dataDir(got))
		}
	}
	if _, err := setDataDir([]byte("data-dir: [unclosed"), "/x"); err == nil {
		t.Error("invalid YAML accepted")
	}
	if _, err := setDataDir([]byte("data-dir: /a\ndata-dir: /b\n"), "/x"); err == nil {
		t.Error("duplicate data-dir accepted")
	}
	if _, err := setDataDir([]byte("data-dir: >\n  /a\n"), "/x"); err == nil {
		t.Error("a multi-line data-dir was replaced without noticing the leftover")
	}
}

func TestRestoredConfig(t *testing.T) {
	got, err := restoredConfig([]byte("a: 1\ndata-dir: \"/mnt/k3s\"\nb: 2\n"), DefaultSource)
	if err != nil || string(got) != "a: 1\nb: 2\n" {
		t.Errorf("default source: %q %v", got, err)
	}
	got, err = restoredConfig([]byte("data-dir: \"/mnt/k3s\"\n"), "/srv/k3s")
	if err != nil || dataDir(got) != "/srv/k3s" {
		t.Errorf("other source: %q %v", got, err)
	}
}

func TestFstab(t *testing.T) {
	in := []byte("UUID=1 / ext4 defaults 0 1")
	with := fstabWith(in, "/mnt/new disk/k3s", "/var/lib/rancher/k3s")
	want := "UUID=1 / ext4 defaults 0 1\n/mnt/new\\040disk/k3s /var/lib/rancher/k3s none bind 0 0\n"
	if string(with) != want {
		t.Errorf("fstabWith = %q, want %q", with, want)
	}
	if again := fstabWith(with, "/mnt/new disk/k3s", "/var/lib/rancher/k3s"); string(again) != want {
		t.Errorf("fstabWith twice = %q", again)
	}
	if without := fstabWithout(with, "/mnt/new disk/k3s", "/var/lib/rancher/k3s"); string(without) != "UUID=1 / ext4 defaults 0 1\n" {
		t.Errorf("fstabWithout = %q", without)
	}
}

func TestMountsBelow(t *testing.T) {
	info := `22 1 254:0 / / rw - ext4 /dev/vda rw
30 22 0:40 / /var/lib/rancher/k3s/agent/containerd/x/rootfs rw - overlay overlay rw
31 22 0:41 / /var/lib/rancher/k3s/agent/containerd/x/rootfs/dev/shm rw - tmpfs shm rw
32 22 0:42 / /var/lib/rancher/k3s rw - ext4 /dev/vdb rw
33 22 0:43 / /var/lib/rancher/k3s2/x rw - tmpfs tmpfs rw
34 22 0:44 / /var/lib/rancher/k3s/storage/with\040space rw - tmpfs tmpfs rw
`
	got := mountsBelow([]byte(info), "/var/lib/rancher/k3s")
	want := []string{"/var/lib/rancher/k3s/agent/containerd/x/rootfs/dev/shm", "/var/lib/rancher/k3s/agent/containerd/x/rootfs", "/var/lib/rancher/k3s/storage/with space"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("mountsBelow = %q, want %q", got, want)
	}
}

func TestCheckTargetMount(t *testing.T) {
	info := []byte(`22 1 254:0 / / rw,relatime - ext4 /dev/vda rw
40 22 259:1 / /mnt/nvme rw,noexec,relatime - ext4 /dev/nvme0n1p1 rw
41 22 259:2 / /mnt/ro ro,relatime - ext4 /dev/nvme0n1p2 ro
42 40 259:3 / /mnt/nvme/fast rw,relatime - xfs /dev/nvme1n1 rw
`)
	for _, tc := range []struct{ existing, want string }{
		{"/var/lib", ""},
		{"/mnt/nvme", "mounted noexec (/mnt/nvme)"},
		{"/mnt/nvme/k3s", "mounted noexec (/mnt/nvme)"},
		{"/mnt/nvmeX", ""},
		{"/mnt/nvme/fast/k3s", ""},
		{"/mnt/ro/k3s", "read-only (/mnt/ro)"},
	} {
		err := checkTargetMount(info, tc.existing, tc.existing+"/target")
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("checkTargetMount(%s) = %v, want %q", tc.existing, err, tc.want)
		}
	}
}

func TestParseRsyncStats(t *testing.T) {
	out := `
Number of files: 1,234 (reg: 1,000, dir: 200, link: 34)
Number of created files: 1,234
Number of regular files transferred: 1,000
Total file size: 1,048,576,000 bytes
Total transferred file size: 1,048,576,000 bytes
`
	if got := parseRsyncStats([]byte(out)); got.files != 1000 || got.bytes != 1048576000 {
		t.Errorf("parseRsyncStats = %+v", got)
	}
}

func TestShimTrees(t *testing.T) {
	// 100 is a shim (group leader), 101 its child holding the directory; 200 an unrelated holder.
	out := `holder 101 100 100 sleep
ps 1 0 0 init
ps 100 1 100 containerd-shim
ps 101 100 100 sleep
ps 102 101 100 pause
ps 300 1 300 bash
`
	p := parseProcesses([]byte(out))
	groups := map[int]bool{}
	if got, want := p.shimTrees(groups), []int{-100, 100, 101, 102}; !reflect.DeepEqual(got, want) {
		t.Errorf("shimTrees = %v, want %v", got, want)
	}
	// The shim died; its orphaned child still holds the directory: it belongs to the shim's group.
	p = parseProcesses([]byte("holder 101 1 100 sleep\nps 101 1 100 sleep\n"))
	if got := p.shimTrees(groups); !reflect.DeepEqual(got, []int{-100, 101}) {
		t.Errorf("orphan: shimTrees = %v", got)
	}
	p = parseProcesses([]byte("holder 300 1 300 bash\nps 300 1 300 bash\n"))
	if got := p.shimTrees(map[int]bool{}); got != nil {
		t.Errorf("a shell holding the directory must not be killed: %v", got)
	}
	if d := p.describe(); d != "bash (pid 300)" {
		t.Errorf("describe = %q", d)
	}
}

func TestParseManifest(t *testing.T) {
	m, err := parseManifest([]byte("count dirs=3 files=5 links=2 other=0 bytes=1234\nsum abc server/token\nsum def server/db/state.db\n"))
	if err != nil || m.files != 5 || m.entries != 10 || m.sums["server/token"] != "abc" || len(m.sums) != 2 {
		t.Errorf("parseManifest = %+v, %v", m, err)
	}
	if _, err := parseManifest([]byte("garbage")); err == nil {
		t.Error("garbage accepted")
	}
}

func TestParseImportID(t *testing.T) {
	n, s, tg, m, err := parseImportID("node-1,/var/lib/rancher/k3s,/mnt/k3s,bind_mount")
	if err != nil || n != "node-1" || s != "/var/lib/rancher/k3s" || tg != "/mnt/k3s" || m != MethodBindMount {
		t.Errorf("parseImportID = %q %q %q %q %v", n, s, tg, m, err)
	}
	for _, bad := range []string{"node-1", "node-1,/a", ",/a/b,/c/d", "n,/a/b,/a/b", "n,/a/b,/c/d,rename"} {
		if _, _, _, _, err := parseImportID(bad); err == nil {
			t.Errorf("parseImportID(%q) accepted", bad)
		}
	}
}

// An import block's identity: source and switch_method default as in the schema; the same checks
// as an import ID.
func TestParseImportIdentity(t *testing.T) {
	str := types.StringValue
	n, s, tg, m, err := parseImportIdentity(identityModel{Node: str("node-1"), Source: types.StringNull(), Target: str("/mnt/k3s"), SwitchMethod: types.StringNull()})
	if err != nil || n != "node-1" || s != DefaultSource || tg != "/mnt/k3s" || m != MethodSymlink {
		t.Errorf("parseImportIdentity = %q %q %q %q %v", n, s, tg, m, err)
	}
	for _, bad := range []identityModel{
		{Node: types.StringNull(), Target: str("/mnt/k3s")},
		{Node: str("n"), Target: types.StringNull()},
		{Node: str("n"), Source: str("/a/b"), Target: str("/a/b")},
		{Node: str("n"), Target: str("/mnt/k3s"), SwitchMethod: str("rename")},
	} {
		if _, _, _, _, err := parseImportIdentity(bad); err == nil {
			t.Errorf("parseImportIdentity(%v) accepted", bad)
		}
	}
}

func TestParseDF(t *testing.T) {
	fs, err := parseDF("  66917812224 270553174016 ext4 /dev/vda /mnt/my disk")
	if err != nil || fs.AvailBytes != 66917812224 || fs.Type != "ext4" || fs.MountPoint != "/mnt/my disk" {
		t.Errorf("parseDF = %+v %v", fs, err)
	}
	if !strings.Contains(fs.String(), "62.3 GiB free of 252.0 GiB") {
		t.Errorf("String = %q", fs.String())
	}
}

func TestOnlyVanished(t *testing.T) {
	cases := []struct {
		stderr string
		want   bool
	}{
		// What rsync 3.5 printed in CI when kine checkpointed during the first copy.
		{`rsync: [sender] get_acl: sys_acl_get_file(server/db/state.db-shm, ACL_TYPE_ACCESS): No such file or directory (2)
file has vanished: "/var/lib/rancher/k3s/server/db/state.db-wal"
rsync error: some files/attrs were not transferred (see previous errors) (code 23) at main.c(1394) [sender=3.5.0]`, true},
		{`file has vanished: "/x"`, true},
		{`rsync: [receiver] write failed on "/mnt/nvme/k3s/x": No space left on device (28)
rsync error: some files/attrs were not transferred (see previous errors) (code 23) at main.c(1394) [sender=3.5.0]`, false},
		{`rsync: [sender] send_files failed to open "/var/lib/rancher/k3s/x": Permission denied (13)
file has vanished: "/var/lib/rancher/k3s/y"`, false},
		{`rsync error: some files/attrs were not transferred (see previous errors) (code 23) at main.c(1394) [sender=3.5.0]`, false},
		{"", false},
	}
	for _, c := range cases {
		if got := onlyVanished(c.stderr); got != c.want {
			t.Errorf("onlyVanished(%q) = %t, want %t", c.stderr, got, c.want)
		}
	}
}
