package capacity

import (
	"fmt"
	"strings"
)

// IEC formats a byte count with IEC units and one decimal ("12.3 GiB", "512 B").
func IEC(n int64) string {
	const unit = 1024
	if n < unit && n > -unit {
		return fmt.Sprintf("%d B", n)
	}
	v := float64(n)
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB", "PiB"} {
		v /= unit
		if v < unit && v > -unit {
			return fmt.Sprintf("%.1f %s", v, u)
		}
	}
	return fmt.Sprintf("%.1f EiB", v/unit)
}

// summarizeFilesystems describes each node's filesystem in a line, after a line of totals.
func summarizeFilesystems(what string, fss map[string]Filesystem) string {
	var b strings.Builder
	var avail int64
	least, leastNode := int64(-1), ""
	for _, n := range sortedKeys(fss) {
		a := fss[n].AvailableBytes
		avail += a
		if least < 0 || a < least {
			least, leastNode = a, n
		}
	}
	fmt.Fprintf(&b, "%s on %d node(s): %s available in total, least on %s (%s)", what, len(fss), IEC(avail), leastNode, IEC(least))
	for _, n := range sortedKeys(fss) {
		f := fss[n]
		fmt.Fprintf(&b, "\n%s: %s", n, f.Path)
		if f.ResolvedPath != f.Path {
			if f.Exists {
				fmt.Fprintf(&b, " (-> %s)", f.ResolvedPath)
			} else {
				fmt.Fprintf(&b, " (not made yet; measured at %s)", f.ResolvedPath)
			}
		}
		fmt.Fprintf(&b, " on %s (%s at %s", f.Device, f.FSType, f.MountPoint)
		if f.ReadOnly {
			b.WriteString(", read-only")
		}
		fmt.Fprintf(&b, "): %s available of %s", IEC(f.AvailableBytes), IEC(f.SizeBytes))
		if f.UsedPercent != nil {
			fmt.Fprintf(&b, ", %d%% used", *f.UsedPercent)
		}
		if f.InodesUsedPercent != nil {
			fmt.Fprintf(&b, ", inodes %d%% used", *f.InodesUsedPercent)
		}
		if len(f.Disks) == 0 {
			b.WriteString("; no block device")
		}
		for _, d := range f.Disks {
			kind := "non-rotational"
			if d.Rotational {
				kind = "rotational"
			}
			if d.NVMe {
				kind += ", NVMe"
			}
			if d.Model != "" {
				kind += fmt.Sprintf(", model %q", d.Model)
			}
			if d.BackingFile != "" {
				kind += ", backed by " + d.BackingFile
			}
			if d.ReadOnly {
				kind += ", read-only"
			}
			fmt.Fprintf(&b, "; disk %s (%s, %s)", d.Name, IEC(d.SizeBytes), kind)
		}
	}
	return b.String()
}

// summarizeLonghorn describes Longhorn's view per node and disk.
func summarizeLonghorn(namespace string, nodes map[string]LonghornNode) string {
	var b strings.Builder
	var maximum, available, scheduled int64
	for _, n := range nodes {
		m, a, s, _ := n.Sum()
		maximum, available, scheduled = maximum+m, available+a, scheduled+s
	}
	fmt.Fprintf(&b, "Longhorn in %s on %d node(s): %s available of %s, %s scheduled", namespace, len(nodes), IEC(available), IEC(maximum), IEC(scheduled))
	for _, name := range sortedKeys(nodes) {
		n := nodes[name]
		fmt.Fprintf(&b, "\n%s: %d disk(s)%s", name, len(n.Disks), conditions(n.Ready, n.Schedulable))
		for _, dn := range sortedKeys(n.Disks) {
			d := n.Disks[dn]
			if d.StorageMaximum == nil {
				fmt.Fprintf(&b, "; %s %s: not reported yet", dn, d.Path)
				continue
			}
			fmt.Fprintf(&b, "; %s %s: %s available of %s, %s scheduled, %s reserved%s", dn, d.Path,
				IEC(deref(d.StorageAvailable)), IEC(*d.StorageMaximum), IEC(deref(d.StorageScheduled)), IEC(d.StorageReserved), conditions(d.Ready, d.Schedulable))
		}
	}
	return b.String()
}

func conditions(ready, schedulable *bool) string {
	var parts []string
	for _, c := range []struct {
		name string
		v    *bool
	}{{"ready", ready}, {"schedulable", schedulable}} {
		switch {
		case c.v == nil:
		case *c.v:
			parts = append(parts, c.name)
		default:
			parts = append(parts, "not "+c.name)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// summarizeClass describes a class's published capacity.
func summarizeClass(c ClassCapacity) string {
	var b strings.Builder
	fmt.Fprintf(&b, "storage class %s (%s)", c.Name, c.Provisioner)
	if c.CSI == nil && c.Available == nil {
		b.WriteString(": the cluster publishes no capacity for it (no CSIStorageCapacity objects, and it is not " + NoProvisioner + ")")
		return b.String()
	}
	if c.CSI != nil {
		fmt.Fprintf(&b, "\nCSIStorageCapacity: %s in %d segment(s)", IEC(c.CSI.CapacityBytes), len(c.CSI.Segments))
		for _, s := range c.CSI.Segments {
			sel := "no topology"
			if s.Selector != nil {
				sel = *s.Selector
				if sel == "" {
					sel = "every node"
				}
			}
			fmt.Fprintf(&b, "; %s: %s (nodes: %s)", sel, IEC(s.CapacityBytes), listOrNone(s.Nodes))
		}
	}
	if c.Available != nil {
		fmt.Fprintf(&b, "\nAvailable volumes: %d, %s in total, largest %s", c.Available.Count, IEC(c.Available.TotalBytes), IEC(c.Available.LargestBytes))
		for _, n := range sortedKeys(c.AvailableByNode) {
			s := c.AvailableByNode[n]
			fmt.Fprintf(&b, "; %s: %d (%s, largest %s)", n, s.Count, IEC(s.TotalBytes), IEC(s.LargestBytes))
		}
	}
	return b.String()
}
