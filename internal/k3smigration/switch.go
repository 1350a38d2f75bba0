package k3smigration

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/node"
)

// switchSteps is what one switch method does: toTarget points k3s at spec.Target, toSource at
// spec.Source. Migrate applies toTarget and undoes with toSource; Restore the other way round.
// Each is safe to run on a switch that was made only in part, or not at all.
type switchSteps struct {
	toTarget, toSource func(ctx context.Context, m *move) error
}

// switches is the one table of per-method steps Migrate and Restore both use.
var switches = map[Method]switchSteps{
	MethodSymlink: {
		toTarget: func(ctx context.Context, m *move) error {
			_, err := runScript(ctx, m.host, scriptSymlinkSwap, m.spec.Source, m.spec.Target, m.away)
			return err
		},
		toSource: func(ctx context.Context, m *move) error {
			_, err := runScript(ctx, m.host, scriptUndoSwitch, m.spec.Source, m.spec.Target, m.away)
			return err
		},
	},
	MethodBindMount: {
		toTarget: func(ctx context.Context, m *move) error {
			if _, err := runScript(ctx, m.host, scriptBindSwitch, m.spec.Source, m.spec.Target, m.away); err != nil {
				return err
			}
			if err := addFstab(ctx, m.host, m.spec.FstabFile, m.spec.Target, m.spec.Source); err != nil {
				_, undoErr := runScript(ctx, m.host, scriptUndoSwitch, m.spec.Source, m.spec.Target, m.away)
				return errors.Join(err, undoErr)
			}
			return nil
		},
		toSource: func(ctx context.Context, m *move) error {
			if err := removeFstab(ctx, m.host, m.spec.FstabFile, m.spec.Target, m.spec.Source); err != nil {
				return err
			}
			_, err := runScript(ctx, m.host, scriptUndoSwitch, m.spec.Source, m.spec.Target, m.away)
			return err
		},
	},
	MethodConfig: {
		toTarget: func(ctx context.Context, m *move) error {
			if err := writeConfig(ctx, m.host, m.spec.ConfigFile, m.configOnTarget); err != nil {
				return err
			}
			if !m.rename || !sourceIsDir(ctx, m.host, m.spec.Source) {
				return nil
			}
			if _, err := runScript(ctx, m.host, scriptRename, m.spec.Source, m.away); err != nil {
				return errors.Join(err, writeConfig(ctx, m.host, m.spec.ConfigFile, m.configOnSource))
			}
			return nil
		},
		toSource: func(ctx context.Context, m *move) error {
			var errs []error
			if m.rename && !sourceIsDir(ctx, m.host, m.spec.Source) {
				if _, err := runScript(ctx, m.host, scriptRename, m.away, m.spec.Source); err != nil {
					errs = append(errs, err)
				}
			}
			return errors.Join(append(errs, writeConfig(ctx, m.host, m.spec.ConfigFile, m.configOnSource))...)
		},
	},
}

// apply switches k3s to dest: the carried mounts first (so that k3s finds them there), then the
// paths k3s wrote (config only), then the method's own step.
func (m *move) apply(ctx context.Context) error {
	if len(m.carry) > 0 {
		tflog.Info(ctx, "carrying the filesystems mounted below the data dir", map[string]any{"mounts": m.carry, "to": m.destReal})
		if _, err := runScript(ctx, m.host, scriptCarry, append([]string{"mount", m.live, m.destReal}, m.carry...)...); err != nil {
			return fmt.Errorf("bind-mounting the carried filesystems below %s: %w", m.destReal, err)
		}
	}
	if m.spec.Method == MethodConfig {
		res, err := runScript(ctx, m.host, scriptFixup, fixupArgs(m.dest, m.switchedPath(), m.from, m.live)...)
		if err != nil {
			return fmt.Errorf("pointing the paths k3s wrote in %s at %s: %w", m.dest, m.switchedPath(), err)
		}
		if fixed := parseKV(res.Stdout)["fixed"]; len(fixed) > 0 {
			tflog.Info(ctx, "pointed links and kubeconfigs at the new path", map[string]any{"fixed": fixed})
		}
	}
	steps := switches[m.spec.Method]
	if m.toTarget {
		return steps.toTarget(ctx, m)
	}
	return steps.toSource(ctx, m)
}

// unapply undoes apply.
func (m *move) unapply(ctx context.Context) error {
	steps := switches[m.spec.Method]
	var err error
	if m.toTarget {
		err = steps.toSource(ctx, m)
	} else {
		err = steps.toTarget(ctx, m)
	}
	if err != nil {
		return err
	}
	if len(m.carry) > 0 {
		if _, err := runScript(ctx, m.host, scriptCarry, append([]string{"unmount", m.live, m.destReal}, m.carry...)...); err != nil {
			return fmt.Errorf("taking away the bind mounts of the carried filesystems below %s: %w", m.destReal, err)
		}
	}
	return nil
}

// sourceIsDir reports whether p is a real directory (not a link), false on any error.
func sourceIsDir(ctx context.Context, host *node.Host, p string) bool {
	fi, err := host.Stat(ctx, p)
	return err == nil && fi.IsDir()
}

// readOptional reads a file that may be missing.
func readOptional(ctx context.Context, host *node.Host, p string) ([]byte, bool, error) {
	b, err := host.ReadFile(ctx, p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	return b, err == nil, err
}

// writeConfig writes the k3s configuration file; a nil content removes it (it did not exist).
func writeConfig(ctx context.Context, host *node.Host, p string, content []byte) error {
	if content == nil {
		_, err := runOn(ctx, host, node.NewCommand("rm", "-f", "--", p))
		return err
	}
	if err := host.MkdirAll(ctx, path.Dir(p), node.DirOptions{}); err != nil {
		return err
	}
	tflog.Info(ctx, "writing the k3s configuration", map[string]any{"path": p})
	return host.WriteFile(ctx, p, content, 0o600)
}

func addFstab(ctx context.Context, host *node.Host, fstab, target, source string) error {
	content, _, err := readOptional(ctx, host, fstab)
	if err != nil {
		return err
	}
	return host.WriteFile(ctx, fstab, fstabWith(content, target, source), 0o644)
}

func removeFstab(ctx context.Context, host *node.Host, fstab, target, source string) error {
	content, existed, err := readOptional(ctx, host, fstab)
	if err != nil || !existed {
		return err
	}
	out := fstabWithout(content, target, source)
	if string(out) == string(content) {
		return nil
	}
	return host.WriteFile(ctx, fstab, out, 0o644)
}

// carriedMounts returns the mount points below dir that are not below another one of them,
// relative to dir, and all of them (absolute).
func carriedMounts(mounts []string, dir string) (top, all []string) {
	for _, mp := range mounts {
		all = append(all, mp)
		nested := false
		for _, other := range mounts {
			if other != mp && strings.HasPrefix(mp, other+"/") {
				nested = true
			}
		}
		if !nested {
			top = append(top, strings.TrimPrefix(mp, dir+"/"))
		}
	}
	return top, all
}
