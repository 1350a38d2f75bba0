package k3smigration

import (
	"context"
	"errors"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/fio"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/node"
)

// volatileFS are filesystem types whose contents a reboot loses (or that cannot hold a copy
// reliably): never a target.
var volatileFS = map[string]string{
	"tmpfs": "memory", "ramfs": "memory", "devtmpfs": "memory", "overlay": "a container's overlay (its upper layer is often memory)",
	"squashfs": "read-only", "iso9660": "read-only",
}

// preflightInfo is what preflight learnt.
type preflightInfo struct {
	sourceReal, targetReal string
	// targetExisting is target or its nearest existing parent.
	targetExisting string
	// sourceMount is true when the source is itself a mount point (only allowed for config).
	sourceMount        bool
	sourceFS, targetFS Filesystem
}

// preflight checks that m.from is the k3s data directory k3s uses, that m.dest is absent, empty
// or an unfinished copy of it that nothing uses, on a disk (not memory) with room, that no
// filesystem is mounted below m.from (unless carried), that k3s-killall.sh would not destroy
// any of it, and finds the service. It sets m.service, m.live, m.destReal, m.carry and the
// filesystems in m.result.
func (m *move) preflight(ctx context.Context) (preflightInfo, error) {
	from, to := m.from, m.dest
	var info preflightInfo
	if err := CheckPaths(from, to); err != nil {
		return info, err
	}
	if m.hooks.Before != nil {
		if err := m.hooks.Before(ctx, StepPreflight); err != nil {
			return info, err
		}
	}
	service, units, haveSystemd, err := m.detectService(ctx)
	if err != nil {
		return info, err
	}
	m.service, m.systemd = service, haveSystemd

	res, err := runScript(ctx, m.host, scriptPreflight, from, to, MarkerName)
	if err != nil {
		return info, err
	}
	kv := parseKV(res.Stdout)
	if err := m.checkSource(kv, &info); err != nil {
		return info, err
	}
	info.targetReal = first(kv, "target_real")
	info.targetExisting = first(kv, "target_existing")
	if err := CheckPaths(info.sourceReal, info.targetReal); err != nil {
		return info, fmt.Errorf("after resolving symbolic links: %w", err)
	}
	m.live, m.destReal = info.sourceReal, info.targetReal
	if err := m.checkK3sConfig(ctx, units[service], first(kv, "storage") == "nonempty"); err != nil {
		return info, err
	}

	resume, err := m.checkTarget(ctx, kv, info)
	if err != nil {
		return info, err
	}
	look := parseLook(res.Stdout, []string{info.targetReal})
	if len(look.procs.procs) > 0 {
		return info, fmt.Errorf("%s is in use by %s: a running k3s (or anything else) holds it, so no copy may write into it", to, look.procs.describe())
	}
	if err := m.checkMounts(look.table, info); err != nil {
		return info, err
	}
	if err := m.checkKillall(kv, info); err != nil {
		return info, err
	}

	if info.sourceFS, err = parseDF(first(kv, "source_df")); err != nil {
		return info, err
	}
	if info.targetFS, err = parseDF(first(kv, "target_df")); err != nil {
		return info, err
	}
	m.result.SourceFS, m.result.TargetFS = info.sourceFS, info.targetFS
	if why, ok := volatileFS[info.targetFS.Type]; ok {
		return info, fmt.Errorf("%s is on a %s filesystem (%s, mounted on %s): its contents would not survive a reboot or cannot hold the data; choose a directory on a disk",
			to, info.targetFS.Type, why, info.targetFS.MountPoint)
	}
	if err := checkTargetMount(look.table, info.targetExisting, to); err != nil {
		return info, err
	}
	return info, m.checkRoom(ctx, kv, info, resume, res.Stdout)
}

// checkSource refuses a source that is not a k3s data directory this migration can move: a
// symbolic link (migrated already), missing, without server/ or agent/, on a node that lacks the
// tools, or a mount point that a rename cannot move.
func (m *move) checkSource(kv map[string][]string, info *preflightInfo) error {
	from := m.from
	switch first(kv, "source") {
	case "dir":
	case "symlink":
		return fmt.Errorf("%s is a symbolic link to %s, not a directory: it looks migrated already", from, first(kv, "source_link"))
	case "missing":
		return fmt.Errorf("%s does not exist on the node", from)
	default:
		return fmt.Errorf("%s is not a directory", from)
	}
	info.sourceReal = first(kv, "source_real")
	if !contains(kv["layout"], "server") && !contains(kv["layout"], "agent") {
		return fmt.Errorf("%s does not look like a k3s data directory (it has neither server/ nor agent/)", from)
	}
	if tools := kv["missing_tool"]; len(tools) > 0 {
		return fmt.Errorf("the node lacks %s: install it (Debian/Ubuntu: apt-get install rsync util-linux coreutils)", strings.Join(tools, ", "))
	}
	info.sourceMount = first(kv, "source_mountpoint") == "yes"
	if info.sourceMount && m.toTarget && m.spec.Method != MethodConfig {
		return fmt.Errorf("%s is itself a mount point, so it cannot be renamed: use switch_method = \"config\", or move the mount instead", from)
	}
	return nil
}

// checkTarget refuses a target that is not absent or empty, unless it holds an unfinished copy
// of the same source (resume: the copy is brought up to date).
func (m *move) checkTarget(ctx context.Context, kv map[string][]string, info preflightInfo) (resume bool, err error) {
	from, to := m.from, m.dest
	switch first(kv, "target") {
	case "missing", "empty":
	case "nonempty":
		marker := first(kv, "target_marker")
		switch {
		case marker == "":
			return false, fmt.Errorf("%s is not empty: the target must be absent or empty (or hold an unfinished copy of %s)", to, from)
		case first(kv, "target_marker_state") == "complete":
			return false, fmt.Errorf("%s holds a finished migration of %s (its %s says complete): k3s ran on it, so it may hold data %s does not. "+
				"Nothing was copied. If k3s uses it, import the migration (terraform import) instead of migrating again; "+
				"if you reverted to the original on purpose, move %s away first", to, marker, MarkerName, from, to)
		case marker != info.sourceReal:
			return false, fmt.Errorf("%s is not empty: it holds an unfinished copy of %s, not of %s (%s): the target must be absent or empty, or hold an unfinished copy of the same source",
				to, marker, from, info.sourceReal)
		}
		resume = true
		tflog.Info(ctx, "the target holds an unfinished copy from an earlier attempt: it is brought up to date", map[string]any{"target": to})
	case "symlink":
		return false, fmt.Errorf("%s is a symbolic link: name the directory itself", to)
	default:
		return false, fmt.Errorf("%s exists and is not a directory", to)
	}
	return resume, nil
}

// checkRoom refuses a target filesystem without room for the data (less what an unfinished copy
// holds already), the margin and, when measured, fio's file.
func (m *move) checkRoom(ctx context.Context, kv map[string][]string, info preflightInfo, resume bool, stdout []byte) error {
	from, to := m.from, m.dest
	used, err1 := strconv.ParseInt(first(kv, "source_used"), 10, 64)
	apparent, err2 := strconv.ParseInt(first(kv, "source_apparent"), 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("reading the size of %s: %w (output %q)", from, err, firstLines(string(stdout), 20))
	}
	data := max(used, apparent)
	var partial int64
	if resume {
		// The unfinished copy already holds part of the data: only the rest needs room.
		partial, _ = strconv.ParseInt(first(kv, "target_used"), 10, 64) //nolint:errcheck // unknown counts as nothing copied yet.
	}
	need := max(data-partial, 0) + m.spec.MarginBytes
	if m.spec.MeasureWrite {
		spec, err := measureSpec()
		if err != nil {
			return err
		}
		need += fio.SpaceBytes(spec)
	}
	tflog.Info(ctx, "k3s data dir migration: preflight", map[string]any{
		"service": m.service, "source": from, "source_filesystem": info.sourceFS.String(), "target": to,
		"target_filesystem": info.targetFS.String(), "data_bytes": data, "already_copied_bytes": partial, "margin_bytes": m.spec.MarginBytes,
		"same_filesystem": first(kv, "same_fs") == "yes", "carried_mounts": m.carry,
	})
	if first(kv, "same_fs") == "yes" {
		tflog.Warn(ctx, "source and target are on the same filesystem: the migration frees no space and gains no speed")
	}
	if info.targetFS.AvailBytes < need {
		return fmt.Errorf("not enough free space for %s: the data takes %s (%s of it already copied) and the margin is %s, but %s has %s free",
			to, human(data), human(partial), human(m.spec.MarginBytes), info.targetFS.MountPoint, human(info.targetFS.AvailBytes))
	}
	return nil
}

// checkTargetMount refuses a target on a filesystem mounted read-only or noexec: k3s runs its
// bundled binaries (containerd, runc, the CNI plugins) from <data-dir>/data/<hash>/bin, so on a
// noexec mount it would stop and never start again; the check comes before k3s is stopped.
func checkTargetMount(mountinfo []byte, existing, target string) error {
	mp, opts := mountOptions(mountinfo, existing)
	for _, o := range strings.Split(opts, ",") {
		switch o {
		case "noexec":
			return fmt.Errorf("%s is on a filesystem mounted noexec (%s): k3s runs its bundled binaries from <data-dir>/data, so it could not start there. "+
				"Remount it without noexec (and fix its fstab entry) first", target, mp)
		case "ro":
			return fmt.Errorf("%s is on a filesystem mounted read-only (%s): nothing could be copied there. Remount it read-write, or choose a target on another disk", target, mp)
		}
	}
	return nil
}

// checkMounts refuses filesystems mounted below the source, naming them, unless
// spec.CarryMounts says to carry them along (then they become m.carry).
func (m *move) checkMounts(table []byte, info preflightInfo) error {
	mounts := dedupe(append(mountsBelow(table, info.sourceReal), mountsBelow(table, m.from)...))
	if len(mounts) == 0 {
		return nil
	}
	top, all := carriedMounts(relativeTo(mounts, m.from, info.sourceReal), info.sourceReal)
	if !m.spec.CarryMounts {
		return fmt.Errorf("filesystems are mounted below %s: %s. A copy would hold empty directories in their place, and the migration never unmounts what it did not mount. "+
			"Set carry_mounts = true to carry them along as mounts (bind-mounted at the same place below the target; your fstab entries keep working through the symlink), "+
			"or move them yourself first", m.from, strings.Join(all, ", "))
	}
	if m.spec.Method != MethodSymlink {
		return fmt.Errorf("carry_mounts needs switch_method = \"symlink\": filesystems are mounted below %s (%s), and only the symlink keeps their fstab mount points "+
			"(below %s) resolving to the new directory after a reboot", m.from, strings.Join(all, ", "), m.from)
	}
	m.carry = top
	return nil
}

// relativeTo rewrites mount points seen below alias (the configured path) as seen below real.
func relativeTo(mounts []string, alias, real string) []string {
	out := make([]string, 0, len(mounts))
	for _, mp := range mounts {
		if rest, ok := strings.CutPrefix(mp, alias+"/"); ok && alias != real {
			mp = real + "/" + rest
		}
		out = append(out, mp)
	}
	sort.Strings(out)
	return dedupe(out)
}

// checkKillall refuses a migration that k3s-killall.sh, which the stop runs, would harm: it
// force-unmounts and then removes (umount -f, rm -rf) every mount whose path starts with one of
// the prefixes it names (plain string prefixes). Installs from before mid-2024 name
// /var/lib/rancher/k3s and ignore K3S_DATA_DIR, so a target such as /var/lib/rancher/k3s-nvme is
// destroyed.
func (m *move) checkKillall(kv map[string][]string, info preflightInfo) error {
	script := first(kv, "killall")
	if script == "" {
		return nil
	}
	old := ""
	if first(kv, "killall_data_dir") != "yes" {
		old = " (this is the k3s-killall.sh of k3s installs from before mid-2024, which ignores K3S_DATA_DIR; rerunning k3s's install script replaces it)"
	}
	endangered := []string{m.dest, info.targetReal}
	for _, rel := range m.carry {
		endangered = append(endangered, info.sourceReal+"/"+rel, m.from+"/"+rel)
	}
	if m.spec.Method == MethodBindMount {
		endangered = append(endangered, m.spec.Source)
	}
	for _, prefix := range kv["killall_unmounts"] {
		if prefix == "" {
			continue
		}
		for _, p := range endangered {
			if strings.HasPrefix(p, prefix) {
				return fmt.Errorf("%s unmounts (umount -f) and removes (rm -rf) every mount whose path starts with %q%s; %s does, so stopping k3s could destroy it. "+
					"Choose a target (and a switch method) whose paths do not start with %q", script, prefix, old, p, prefix)
			}
		}
	}
	return nil
}

// unitEnvFiles are the EnvironmentFile= paths of a unit's text (%N expanded), those systemd reads.
func unitEnvFiles(unit, service string) []string {
	var out []string
	for _, line := range strings.Split(unit, "\n") {
		v, ok := strings.CutPrefix(strings.TrimSpace(line), "EnvironmentFile=")
		if !ok {
			continue
		}
		v = strings.TrimPrefix(strings.TrimSpace(v), "-")
		out = append(out, strings.ReplaceAll(v, "%N", service))
	}
	return out
}

var dataDirFlag = regexp.MustCompile(`(?:^|\s)(?:--data-dir|-d)(?:=|\s+)("[^"]*"|'[^']*'|[^\s\\]+)`)

// unitDataDir is the data dir the unit passes on k3s's command line ("" when it passes none).
func unitDataDir(unit string) string {
	var exec strings.Builder
	for _, line := range strings.Split(strings.ReplaceAll(unit, "\\\n", " "), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "ExecStart="); ok {
			exec.WriteString(" " + v)
		}
	}
	if mm := dataDirFlag.FindStringSubmatch(exec.String()); mm != nil {
		return strings.Trim(mm[1], `"'`)
	}
	return ""
}

// envDataDir is K3S_DATA_DIR from an environment file's content ("" when unset).
func envDataDir(content []byte) string {
	v := ""
	for _, line := range strings.Split(string(content), "\n") {
		line = strings.TrimPrefix(strings.TrimSpace(line), "export ")
		if rest, ok := strings.CutPrefix(line, "K3S_DATA_DIR="); ok {
			v = strings.Trim(strings.TrimSpace(rest), `"'`)
		}
	}
	return v
}

// checkK3sConfig finds the data dir k3s uses as k3s does (its command line, then the config file
// and its config.yaml.d drop-ins, the last one setting it winning, then K3S_DATA_DIR from the
// unit's environment files, then the default) and refuses a migration of a directory k3s does
// not use, or one switch_method = "config" could not switch (a setting that would win over the
// config file, local-path volumes whose host paths would dangle).
func (m *move) checkK3sConfig(ctx context.Context, unit string, storageInUse bool) error {
	expect := m.spec.Source
	if !m.toTarget && m.spec.Method == MethodConfig {
		expect = m.spec.Target
	}
	dir, where := DefaultSource, "k3s's default"
	for _, f := range unitEnvFiles(unit, m.service) {
		content, _, err := readOptional(ctx, m.host, f)
		if err != nil {
			return err
		}
		if v := envDataDir(content); v != "" {
			dir, where = v, "K3S_DATA_DIR in "+f
		}
	}
	files := []string{m.spec.ConfigFile}
	res, err := runOn(ctx, m.host, node.NewCommand("find", m.spec.ConfigFile+".d", "-maxdepth", "1", "-name", "*.yaml", "-type", "f"))
	if err == nil {
		var dropins []string
		for _, f := range strings.Split(strings.TrimSpace(string(res.Stdout)), "\n") {
			if f != "" && CheckPath("drop-in", f) == nil {
				dropins = append(dropins, f)
			}
		}
		sort.Strings(dropins)
		files = append(files, dropins...)
	}
	configWhere := ""
	for _, f := range files {
		content, _, err := readOptional(ctx, m.host, f)
		if err != nil {
			return err
		}
		if v := dataDir(content); v != "" {
			dir, where, configWhere = v, "data-dir in "+f, f
		}
	}
	if v := unitDataDir(unit); v != "" {
		dir, where = v, "--data-dir on the "+m.service+" unit's command line"
		if m.spec.Method == MethodConfig {
			return fmt.Errorf("the %s unit sets the data dir on its command line (`systemctl cat %s` shows --data-dir %s), which wins over %s: "+
				"use switch_method = \"symlink\" or \"bind_mount\", or move the setting into the config file", m.service, m.service, v, m.spec.ConfigFile)
		}
	}
	if path.Clean(dir) != expect && path.Clean(dir) != m.live {
		return fmt.Errorf("k3s on this node uses the data dir %s (%s), not %s: nothing was changed", dir, where, expect)
	}
	if m.spec.Method != MethodConfig {
		return nil
	}
	if configWhere != "" && configWhere != m.spec.ConfigFile {
		return fmt.Errorf("data-dir is set in %s, which k3s reads after %s and which wins over it: set config_file = %q", configWhere, m.spec.ConfigFile, configWhere)
	}
	if storageInUse {
		return fmt.Errorf("%s/storage holds local-path volumes, whose PersistentVolumes name host paths below %s: switch_method = \"config\" would leave them "+
			"pointing at the old directory. Use switch_method = \"symlink\" (or \"bind_mount\"), which keeps those paths working", m.from, m.from)
	}
	return nil
}

// detectService finds the k3s unit, returning it, the unit texts by name, and whether the node
// runs systemd with systemd-run (for the node guard).
func (m *move) detectService(ctx context.Context) (string, map[string]string, bool, error) {
	res, err := runScript(ctx, m.host, scriptServices)
	if err != nil {
		return "", nil, false, err
	}
	states := map[string]string{}
	units := map[string]string{}
	systemd := false
	var current string
	for _, line := range strings.Split(string(res.Stdout), "\n") {
		switch {
		case line == "systemd=yes":
			systemd = true
		case strings.HasPrefix(line, "service="):
			f := strings.Fields(strings.TrimPrefix(line, "service="))
			if len(f) >= 1 {
				states[f[0]] = strings.Join(f[1:], " ")
			}
		case strings.HasPrefix(line, "unit="):
			current = strings.TrimPrefix(line, "unit=")
		case current != "":
			units[current] += line + "\n"
		}
	}
	if m.spec.Service != "" {
		state, ok := states[m.spec.Service]
		if !ok {
			return "", nil, false, fmt.Errorf("systemd has no %s unit on this node", m.spec.Service)
		}
		if state != "active" {
			return "", nil, false, fmt.Errorf("%s is %q, not active: the migration checks k3s's health before and after, so start it first", m.spec.Service, state)
		}
		return m.spec.Service, units, systemd, nil
	}
	var active []string
	for name, state := range states {
		if state == "active" {
			active = append(active, name)
		}
	}
	sort.Strings(active)
	switch len(active) {
	case 1:
		return active[0], units, systemd, nil
	case 0:
		if len(states) == 0 {
			return "", nil, false, errors.New("systemd has neither a k3s nor a k3s-agent unit on this node")
		}
		return "", nil, false, fmt.Errorf("no k3s unit is active (%v): start k3s first, or set service", states)
	default:
		return "", nil, false, fmt.Errorf("both %s are active: set service", strings.Join(active, " and "))
	}
}
