package localpv

import (
	"fmt"
	"path"
	"strings"
)

// protectedTrees are directories that hold the operating system, the kubelet or k3s. Nothing at
// or below them may become a local volume: a volume's data would mix with theirs, and
// delete_directory_on_destroy could remove them.
var protectedTrees = []string{
	"/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/proc", "/run", "/sbin", "/sys", "/usr",
	"/var/lib/kubelet", "/var/lib/rancher/k3s", "/etc/rancher", "/var/lib/containerd", "/var/lib/docker",
	"/var/lib/etcd", "/var/log",
}

// protectedExact are directories that may hold volumes below them but must never be one.
var protectedExact = []string{"/", "/home", "/mnt", "/media", "/opt", "/root", "/srv", "/tmp", "/var", "/var/lib"}

// CheckPath reports why p cannot be a local volume's directory, or nil. The path must be
// absolute and already clean (no `..`, `.`, `//` or trailing `/`) so the plan shows exactly the
// directory that is used.
func CheckPath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("the path is empty")
	case !strings.HasPrefix(p, "/"):
		return fmt.Errorf("%q is not absolute: start it with /", p)
	case strings.ContainsRune(p, 0):
		return fmt.Errorf("%q contains a NUL byte", p)
	case p != path.Clean(p):
		return fmt.Errorf("%q is not clean: write it as %q", p, path.Clean(p))
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return fmt.Errorf("%q contains a .. element", p)
		}
	}
	for _, dir := range protectedExact {
		if p == dir {
			return fmt.Errorf("%q is a system directory: use a directory below it, e.g. %q", p, path.Join(dir, "disks", "vol1"))
		}
	}
	for _, dir := range protectedTrees {
		if p == dir || strings.HasPrefix(p, dir+"/") {
			return fmt.Errorf("%q is inside %s, which belongs to the operating system, the kubelet or k3s", p, dir)
		}
	}
	return nil
}
