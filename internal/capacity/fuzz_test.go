package capacity

import (
	"testing"
)

// What nodes print is input from outside: the parsers never panic, and what they accept is
// consistent.
func FuzzParseFS(f *testing.F) {
	f.Add([]byte("exists yes\ndev 65024\nstatfs 4096 100 50 40 10 5\nmountinfo\n27 1 254:0 / / rw - ext4 /dev/vda rw\nresolved\n/x\n"))
	f.Add([]byte("missing\n"))
	f.Add([]byte("exists no\ndev 1\nstatfs 1 1 1 1 1 1\nmountinfo\n1 2 0:1 / /a\\040b ro - tmpfs t\nresolved\n/a b/c\n"))
	f.Fuzz(func(t *testing.T, out []byte) {
		fs, m, err := parseFS("/x", out)
		if err != nil {
			return
		}
		if !under(fs.ResolvedPath, m.MountPoint) || fs.MountPoint != m.MountPoint {
			t.Errorf("mount %q does not hold %q", m.MountPoint, fs.ResolvedPath)
		}
		if fs.SizeBytes < 0 || fs.AvailableBytes < 0 || fs.UsedBytes < 0 {
			t.Errorf("negative sizes: %+v", fs)
		}
	})
}

func FuzzParseBlock(f *testing.F) {
	f.Add([]byte("virt\tdm-0\tvg-root\npart\tsda3\ndisk\tsda\t1\t0\t0\t100\t\tmodel\n"))
	f.Add([]byte("none\n"))
	f.Fuzz(func(t *testing.T, out []byte) {
		chain, disks, err := parseBlock(out)
		if err == nil && len(disks) > len(chain) {
			t.Errorf("%d disks but a chain of %d", len(disks), len(chain))
		}
	})
}
