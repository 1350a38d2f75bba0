package k3smigration

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/node"
)

// parseKV reads key=value lines (a key may repeat).
func parseKV(out []byte) map[string][]string {
	kv := map[string][]string{}
	for _, line := range strings.Split(string(out), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		kv[k] = append(kv[k], v)
	}
	return kv
}

func first(kv map[string][]string, key string) string {
	if v := kv[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// parseDF reads one line of `df -B1 --output=avail,size,fstype,source,target`.
func parseDF(line string) (Filesystem, error) {
	f := strings.Fields(line)
	if len(f) < 5 {
		return Filesystem{}, fmt.Errorf("unexpected df output %q", line)
	}
	avail, err1 := strconv.ParseInt(f[0], 10, 64)
	size, err2 := strconv.ParseInt(f[1], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return Filesystem{}, fmt.Errorf("unexpected df output %q: %w", line, err)
	}
	return Filesystem{AvailBytes: avail, SizeBytes: size, Type: f[2], Device: f[3], MountPoint: strings.Join(f[4:], " ")}, nil
}

// human formats a byte count with a binary unit.
func human(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

type rsyncStats struct {
	files, bytes int64
}

// parseRsyncStats reads rsync --stats output: regular files transferred and their size.
func parseRsyncStats(out []byte) rsyncStats {
	var s rsyncStats
	num := func(v string) int64 {
		v = strings.TrimSpace(v)
		if i := strings.IndexByte(v, ' '); i >= 0 {
			v = v[:i]
		}
		n, _ := strconv.ParseInt(strings.ReplaceAll(v, ",", ""), 10, 64) //nolint:errcheck // a stat rsync did not print counts as 0.
		return n
	}
	for _, line := range strings.Split(string(out), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "Number of regular files transferred":
			s.files = num(v)
		case "Total transferred file size":
			s.bytes = num(v)
		}
	}
	return s
}

// process is one line of the process table.
type process struct {
	pid, ppid, pgid int
	comm            string
}

// processes is holdersScript's output: the processes using a directory and the whole table.
type processes struct {
	procs []process
	all   map[int]process
}

func parseProcesses(out []byte) processes {
	p := processes{all: map[int]process{}}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || (f[0] != "holder" && f[0] != "ps") {
			continue
		}
		pid, err1 := strconv.Atoi(f[1])
		ppid, err2 := strconv.Atoi(f[2])
		pgid, err3 := strconv.Atoi(f[3])
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		pr := process{pid: pid, ppid: ppid, pgid: pgid, comm: strings.Join(f[4:], " ")}
		if f[0] == "holder" {
			p.procs = append(p.procs, pr)
		} else {
			p.all[pid] = pr
		}
	}
	return p
}

// isShim reports whether a command name is a containerd shim's (comm is cut at 15 characters).
func isShim(comm string) bool {
	return strings.HasPrefix(comm, "containerd-shim")
}

// shimTrees returns what to signal so that the holders go away: every containerd shim that holds
// the directory or is an ancestor of a holder, every process below those shims, and (as negative
// ids) the process groups those shims lead, so that a shim cannot start a new child between the
// look and the signal. groups are shim process groups signalled before: a holder left in one (a
// child orphaned when its shim died) is a shim's too. It returns nil when some holder is neither:
// those are not k3s's to kill.
func (p processes) shimTrees(groups map[int]bool) []int {
	shims := map[int]bool{}
	for _, h := range p.procs {
		if groups[h.pgid] {
			continue
		}
		shim, found := p.shimOf(h)
		if !found {
			return nil
		}
		shims[shim] = true
	}
	kill := map[int]bool{}
	for pid := range shims {
		kill[pid] = true
		if pr, ok := p.all[pid]; ok && pr.pgid == pid {
			groups[pid] = true
		}
	}
	for _, h := range p.procs {
		if groups[h.pgid] {
			kill[h.pid] = true
		}
	}
	for pid := range p.all {
		for a, hops := p.all[pid].ppid, 0; a > 1 && hops < 64; hops++ {
			if shims[a] {
				kill[pid] = true
				break
			}
			a = p.all[a].ppid
		}
	}
	out := make([]int, 0, len(kill)+len(groups))
	for pid := range kill {
		out = append(out, pid)
	}
	for g := range groups {
		out = append(out, -g)
	}
	sort.Ints(out)
	return out
}

// shimOf returns the containerd shim that is h or h's nearest such ancestor.
func (p processes) shimOf(h process) (int, bool) {
	for pid, hops := h.pid, 0; pid > 1 && hops < 64; hops++ {
		pr, ok := p.all[pid]
		if pid == h.pid {
			pr, ok = h, true
		}
		if !ok {
			break
		}
		if isShim(pr.comm) {
			return pid, true
		}
		pid = pr.ppid
	}
	return 0, false
}

// others returns the holders that are neither a containerd shim nor below one: what keeps the
// directory in use that stopping k3s's containers cannot end.
func (p processes) others() processes {
	out := processes{all: p.all}
	for _, h := range p.procs {
		if _, ok := p.shimOf(h); !ok {
			out.procs = append(out.procs, h)
		}
	}
	return out
}

func (p processes) describe() string {
	parts := make([]string, 0, len(p.procs))
	for _, h := range p.procs {
		parts = append(parts, fmt.Sprintf("%s (pid %d)", h.comm, h.pid))
	}
	return strings.Join(parts, ", ")
}

// mountsBelow reads /proc/self/mountinfo and returns the mount points strictly below dir,
// deepest first.
func mountsBelow(mountinfo []byte, dir string) []string {
	var out []string
	seen := map[string]bool{}
	for _, line := range strings.Split(string(mountinfo), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		mp := node.UnescapeMount(f[4])
		if strings.HasPrefix(mp, dir+"/") && !seen[mp] {
			seen[mp] = true
			out = append(out, mp)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if len(out[i]) != len(out[j]) {
			return len(out[i]) > len(out[j])
		}
		return out[i] > out[j]
	})
	return out
}

// mountOptions returns the mount point of the filesystem mountinfo shows holding path (the
// last-mounted of the longest mount points that contain it) and its per-mount options
// ("rw,noexec,relatime"), or "" when none does.
func mountOptions(mountinfo []byte, path string) (mountPoint, options string) {
	for _, line := range strings.Split(string(mountinfo), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 {
			continue
		}
		mp := node.UnescapeMount(f[4])
		if mp != "/" && path != mp && !strings.HasPrefix(path, mp+"/") {
			continue
		}
		if len(mp) >= len(mountPoint) {
			mountPoint, options = mp, f[5]
		}
	}
	return mountPoint, options
}

// parseManifest reads manifestScript's output.
func parseManifest(out []byte) (manifest, error) {
	m := manifest{sums: map[string]string{}}
	for _, line := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasPrefix(line, "count "):
			m.count = strings.TrimPrefix(line, "count ")
			for _, kv := range strings.Fields(m.count) {
				k, v, _ := strings.Cut(kv, "=")
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return manifest{}, fmt.Errorf("unexpected count %q", line)
				}
				if k != "bytes" {
					m.entries += n
				}
				if k == "files" {
					m.files = n
				}
			}
		case strings.HasPrefix(line, "sum "):
			f := strings.SplitN(line, " ", 3)
			if len(f) == 3 {
				m.sums[f[2]] = f[1]
			}
		}
	}
	if m.count == "" {
		return manifest{}, fmt.Errorf("unexpected listing output %q", firstLines(string(out), 5))
	}
	return m, nil
}

func firstLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) <= n {
		return s
	}
	return strings.Join(lines[:n], "\n") + fmt.Sprintf("\n... (%d more lines)", len(lines)-n)
}

// dataDir returns data-dir from a k3s configuration file ("" when unset or unreadable).
func dataDir(content []byte) string {
	var m map[string]any
	if err := yaml.Unmarshal(content, &m); err != nil {
		return ""
	}
	s, _ := m["data-dir"].(string) //nolint:errcheck // a non-string value counts as unset.
	return s
}

// setDataDir returns content with its top-level data-dir set to dir, keeping every other line
// (and comment) as it was. The result is checked to parse with data-dir = dir.
func setDataDir(content []byte, dir string) ([]byte, error) {
	var m map[string]any
	if err := yaml.Unmarshal(content, &m); err != nil {
		return nil, fmt.Errorf("the k3s configuration is not valid YAML: %w", err)
	}
	quoted := strconv.Quote(dir)
	line := "data-dir: " + quoted
	lines := strings.Split(string(content), "\n")
	replaced := false
	for i, l := range lines {
		if isDataDirLine(l) {
			if replaced {
				return nil, errors.New("data-dir is set more than once")
			}
			lines[i], replaced = line, true
		}
	}
	out := strings.Join(lines, "\n")
	if !replaced {
		if out != "" && !strings.HasSuffix(out, "\n") {
			out += "\n"
		}
		out += line + "\n"
	}
	if got := dataDir([]byte(out)); got != dir {
		return nil, fmt.Errorf("setting data-dir gave a file whose data-dir is %q (is data-dir written over several lines?)", got)
	}
	return []byte(out), nil
}

// restoredConfig points content back at source: data-dir removed when source is k3s's default,
// set to source otherwise.
func restoredConfig(content []byte, source string) ([]byte, error) {
	if source != DefaultSource {
		return setDataDir(content, source)
	}
	var kept []string
	for _, l := range strings.Split(string(content), "\n") {
		if !isDataDirLine(l) {
			kept = append(kept, l)
		}
	}
	out := []byte(strings.Join(kept, "\n"))
	if dataDir(out) != "" {
		return nil, errors.New("data-dir could not be removed from the k3s configuration (is it written over several lines?)")
	}
	return out, nil
}

func isDataDirLine(l string) bool {
	for _, key := range []string{"data-dir", `"data-dir"`, `'data-dir'`} {
		if rest, ok := strings.CutPrefix(l, key); ok && strings.HasPrefix(strings.TrimLeft(rest, " \t"), ":") {
			return true
		}
	}
	return false
}

// fstabLine is the line a bind_mount migration adds to fstab.
func fstabLine(target, source string) string {
	return node.EscapeMount(target) + " " + node.EscapeMount(source) + " none bind 0 0"
}

// fstabWith returns content with the bind mount's line added (once).
func fstabWith(content []byte, target, source string) []byte {
	line := fstabLine(target, source)
	for _, l := range strings.Split(string(content), "\n") {
		if strings.TrimSpace(l) == line {
			return content
		}
	}
	out := bytes.Clone(content)
	if len(out) > 0 && !bytes.HasSuffix(out, []byte("\n")) {
		out = append(out, '\n')
	}
	return append(out, []byte(line+"\n")...)
}

// fstabWithout returns content without the bind mount's line.
func fstabWithout(content []byte, target, source string) []byte {
	line := fstabLine(target, source)
	var kept []string
	for _, l := range strings.Split(string(content), "\n") {
		if strings.TrimSpace(l) != line {
			kept = append(kept, l)
		}
	}
	return []byte(strings.Join(kept, "\n"))
}
