package capacity

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/node"
)

// fsScript prints the resolved path, st_dev, statfs numbers and mount table for a path.
//
//go:embed fs.sh
var fsScript string

// blockScript walks sysfs from a mount's block device down to its disks.
//
//go:embed block.sh
var blockScript string

// ErrPathMissing is wrapped by the error for a node path that does not exist.
var ErrPathMissing = errors.New("path does not exist")

// Filesystem is what a node says about the filesystem holding a path: statfs numbers, computed
// as GNU df computes them, the mount it belongs to, and the block devices behind it.
type Filesystem struct {
	// Path is the path asked about; ResolvedPath is it with every symbolic link resolved (or,
	// when Exists is false, its nearest existing ancestor, which was measured instead).
	Path, ResolvedPath string
	Exists             bool
	// MountPoint, Device (the mount's source, as df shows it) and FSType come from mountinfo.
	MountPoint, Device, FSType string
	// ReadOnly is true when the mount or its superblock is mounted ro.
	ReadOnly bool
	// SizeBytes, UsedBytes and AvailableBytes are df's 1B-blocks, Used and Avail: available is
	// what an unprivileged user can still write (reserved blocks excluded).
	SizeBytes, UsedBytes, AvailableBytes int64
	// UsedPercent is df's Use%: used / (used + available), rounded up; nil when both are 0.
	UsedPercent *int64
	// InodesTotal, InodesUsed and InodesFree are df -i's Inodes, IUsed and IFree;
	// InodesUsedPercent is IUse%, nil for a filesystem without an inode count (df's "-").
	InodesTotal, InodesUsed, InodesFree int64
	InodesUsedPercent                   *int64
	// BlockDevices are the kernel names from the filesystem's device down to its disks
	// ("dm-0", "sda3", "sda"); empty without a block device (tmpfs, overlay, NFS).
	BlockDevices []string
	// Disks are the devices at the bottom of that chain.
	Disks []Disk
}

// Disk is a whole block device as sysfs describes it.
type Disk struct {
	Name string
	// Model is the device's model string; "" when sysfs has none (virtio, loop).
	Model      string
	Rotational bool
	NVMe       bool
	ReadOnly   bool
	Removable  bool
	SizeBytes  int64
	// BackingFile is a loop device's backing file.
	BackingFile string
}

// Rotational is true when any disk behind the filesystem spins, nil when no disk is known.
func (f Filesystem) Rotational() *bool {
	if len(f.Disks) == 0 {
		return nil
	}
	spins := false
	for _, d := range f.Disks {
		spins = spins || d.Rotational
	}
	return &spins
}

// NVMe is true when every disk behind the filesystem is an NVMe namespace, nil when no disk is
// known.
func (f Filesystem) NVMe() *bool {
	if len(f.Disks) == 0 {
		return nil
	}
	all := true
	for _, d := range f.Disks {
		all = all && d.NVMe
	}
	return &all
}

// Probe describes the filesystem holding path on host. A missing path is an error wrapping
// ErrPathMissing, unless ancestor is set: then its nearest existing ancestor is measured and
// Filesystem.Exists is false.
func Probe(ctx context.Context, host *node.Host, path string, ancestor bool) (Filesystem, error) {
	mode := ""
	if ancestor {
		mode = "ancestor"
	}
	res, err := host.Run(ctx, node.Script(fsScript, path, mode))
	if err != nil {
		return Filesystem{}, fmt.Errorf("reading the filesystem of %s: %w", path, err)
	}
	fs, mount, err := parseFS(path, res.Stdout)
	if err != nil {
		return Filesystem{}, err
	}
	res, err = host.Run(ctx, node.Script(blockScript, mount.MajMin, mount.Source))
	if err != nil {
		return Filesystem{}, fmt.Errorf("reading the block devices behind %s (%s): %w", fs.MountPoint, fs.Device, err)
	}
	if fs.BlockDevices, fs.Disks, err = parseBlock(res.Stdout); err != nil {
		return Filesystem{}, fmt.Errorf("reading the block devices behind %s (%s): %w", fs.MountPoint, fs.Device, err)
	}
	return fs, nil
}

// mountEntry is one line of /proc/<pid>/mountinfo.
type mountEntry struct {
	MajMin, MountPoint, Options, FSType, Source, SuperOptions string
}

// parseFS parses fsScript's output for the path asked about, and returns the filesystem without
// its block devices, and the mount holding it.
func parseFS(asked string, out []byte) (Filesystem, mountEntry, error) {
	text := string(out)
	if first, _, _ := strings.Cut(text, "\n"); strings.HasPrefix(first, "missing") {
		why := ""
		if first == "missing dangling" {
			why = " (it is a symbolic link to a path that does not exist)"
		}
		return Filesystem{}, mountEntry{}, fmt.Errorf("%s%s: %w", asked, why, ErrPathMissing)
	}
	head, resolved, ok := strings.Cut(text, "\nresolved\n")
	if !ok {
		return Filesystem{}, mountEntry{}, fmt.Errorf("unexpected output reading the filesystem of %s: %q", asked, tail(text))
	}
	resolved = strings.TrimSuffix(resolved, "\n")
	fs := Filesystem{Path: asked, ResolvedPath: resolved}
	head, mountinfo, ok := strings.Cut(head, "\nmountinfo\n")
	if !ok {
		return Filesystem{}, mountEntry{}, fmt.Errorf("unexpected output reading the filesystem of %s: %q", asked, tail(text))
	}
	var dev uint64
	var statfs []uint64
	for _, line := range strings.Split(head, "\n") {
		key, value, _ := strings.Cut(line, " ")
		var err error
		switch key {
		case "exists":
			fs.Exists = value == "yes"
		case "dev":
			dev, err = strconv.ParseUint(value, 10, 64)
		case "statfs":
			for _, f := range strings.Fields(value) {
				n, perr := strconv.ParseUint(f, 10, 63)
				if perr != nil {
					err = perr
					break
				}
				statfs = append(statfs, n)
			}
			if err == nil && len(statfs) != 6 {
				err = fmt.Errorf("%d numbers, want 6", len(statfs))
			}
		}
		if err != nil {
			return Filesystem{}, mountEntry{}, fmt.Errorf("unexpected %s line %q reading the filesystem of %s: %w", key, line, asked, err)
		}
	}
	if statfs == nil {
		return Filesystem{}, mountEntry{}, fmt.Errorf("no statfs line reading the filesystem of %s: %q", asked, tail(text))
	}
	for _, blocks := range statfs[1:4] {
		if statfs[0] != 0 && blocks > math.MaxInt64/statfs[0] {
			return Filesystem{}, mountEntry{}, fmt.Errorf("implausible statfs numbers reading the filesystem of %s: %v", asked, statfs)
		}
	}
	fs.setStatfs(statfs[0], statfs[1], statfs[2], statfs[3], statfs[4], statfs[5])

	mounts, err := parseMountinfo(mountinfo)
	if err != nil {
		return Filesystem{}, mountEntry{}, err
	}
	m, ok := findMount(mounts, resolved, devMajMin(dev))
	if !ok {
		return Filesystem{}, mountEntry{}, fmt.Errorf("no mount in the node's mount table holds %s", resolved)
	}
	fs.MountPoint, fs.Device, fs.FSType = m.MountPoint, m.Source, m.FSType
	fs.ReadOnly = hasOption(m.Options, "ro") || hasOption(m.SuperOptions, "ro")
	return fs, m, nil
}

// setStatfs fills the byte and inode numbers from statfs(2) as GNU df computes them: size is
// f_blocks, used f_blocks - f_bfree, available f_bavail (all in f_frsize units); inodes total
// f_files, free f_ffree; percentages are rounded up.
func (f *Filesystem) setStatfs(frsize, blocks, bfree, bavail, files, ffree uint64) {
	f.SizeBytes = int64(blocks * frsize)
	used := blocks - min(bfree, blocks)
	f.UsedBytes = int64(used * frsize)
	f.AvailableBytes = int64(bavail * frsize)
	f.UsedPercent = percentUp(used, used+bavail)
	f.InodesTotal = int64(files)
	f.InodesFree = int64(ffree)
	iused := files - min(ffree, files)
	f.InodesUsed = int64(iused)
	f.InodesUsedPercent = percentUp(iused, files)
}

// percentUp is part*100/whole rounded up, as df rounds; nil for a whole of 0.
func percentUp(part, whole uint64) *int64 {
	if whole == 0 {
		return nil
	}
	p := int64((part*100 + whole - 1) / whole)
	return &p
}

// devMajMin renders a Linux dev_t as mountinfo's "major:minor" (glibc's gnu_dev_major/minor).
func devMajMin(dev uint64) string {
	major := (dev>>8)&0xfff | (dev>>32)&0xfffff000
	minor := dev&0xff | (dev>>12)&0xffffff00
	return fmt.Sprintf("%d:%d", major, minor)
}

// parseMountinfo parses the lines of /proc/<pid>/mountinfo (proc(5)): ID, parent ID,
// major:minor, root, mount point, mount options, optional fields up to "-", filesystem type,
// source, super options. Paths are unescaped (\040 for a space and so on).
func parseMountinfo(text string) ([]mountEntry, error) {
	var mounts []mountEntry
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		fields := strings.Fields(line)
		sep := -1
		for i := 6; i < len(fields); i++ {
			if fields[i] == "-" {
				sep = i
				break
			}
		}
		if len(fields) < 6 || sep < 0 || len(fields) < sep+3 {
			return nil, fmt.Errorf("unexpected line in the node's /proc/self/mountinfo: %q", line)
		}
		super := ""
		if len(fields) > sep+3 {
			super = fields[sep+3]
		}
		mounts = append(mounts, mountEntry{
			MajMin: fields[2], MountPoint: node.UnescapeMount(fields[4]), Options: fields[5],
			FSType: fields[sep+1], Source: node.UnescapeMount(fields[sep+2]), SuperOptions: super,
		})
	}
	return mounts, nil
}

// findMount returns the mount holding path: the one with the longest mount point that is path
// or a parent of it, the last such in the table (it is mounted over the earlier ones), preferring
// among those with that mount point one whose device is dev.
func findMount(mounts []mountEntry, path, dev string) (mountEntry, bool) {
	best, found := mountEntry{}, false
	for _, m := range mounts {
		if !under(path, m.MountPoint) {
			continue
		}
		switch {
		case !found, len(m.MountPoint) > len(best.MountPoint):
			best, found = m, true
		case m.MountPoint == best.MountPoint && (m.MajMin == dev || best.MajMin != dev):
			best = m
		}
	}
	return best, found
}

// under reports whether path is dir or below it.
func under(path, dir string) bool {
	if dir == "/" || path == dir {
		return true
	}
	return strings.HasPrefix(path, dir+"/")
}

func hasOption(options, want string) bool {
	for _, o := range strings.Split(options, ",") {
		if o == want {
			return true
		}
	}
	return false
}

// parseBlock parses blockScript's output.
func parseBlock(out []byte) ([]string, []Disk, error) {
	text := strings.TrimRight(string(out), "\n")
	if text == "none" {
		return nil, nil, nil
	}
	var chain []string
	var disks []Disk
	for _, line := range strings.Split(text, "\n") {
		f := strings.Split(line, "\t")
		switch {
		case (f[0] == "part" && len(f) == 2) || (f[0] == "virt" && len(f) == 3):
			chain = append(chain, f[1])
		case f[0] == "disk" && len(f) == 8:
			sectors, err := strconv.ParseInt(f[5], 10, 64)
			if err != nil && f[5] != "" {
				return nil, nil, fmt.Errorf("unexpected size in %q: %w", line, err)
			}
			chain = append(chain, f[1])
			disks = append(disks, Disk{
				Name: f[1], Rotational: f[2] == "1", ReadOnly: f[3] == "1", Removable: f[4] == "1",
				SizeBytes: sectors * 512, BackingFile: f[6], Model: strings.TrimSpace(f[7]),
				NVMe: strings.HasPrefix(f[1], "nvme"),
			})
		default:
			return nil, nil, fmt.Errorf("unexpected line from the block device walk: %q", line)
		}
	}
	return chain, disks, nil
}

// tail returns the last 500 bytes of s, for error messages.
func tail(s string) string {
	if len(s) > 500 {
		return "..." + s[len(s)-500:]
	}
	return s
}
