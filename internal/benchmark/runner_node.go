package benchmark

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/fio"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/node"
)

// fioCheckScript prints fio's version, or exits 127 when fio is not on the PATH.
const fioCheckScript = `command -v fio >/dev/null 2>&1 || exit 127
fio --version`

// removeRunDirScript removes a run's own directory ($1) and everything fio left in it.
const removeRunDirScript = `rm -rf -- "$1"`

// nodeRun is one fio run on a node over SSH, in a directory of its own below Dir.
type nodeRun struct {
	Host *node.Host
	Node string
	// Dir is the user's node_path.
	Dir  string
	Spec fio.Spec
	// RunID names the run directory: <Dir>/.clusterstorage-benchmark-<RunID>.
	RunID string
	Log   func(msg string, fields map[string]any)
}

func (r nodeRun) log(msg string, fields map[string]any) {
	if r.Log != nil {
		r.Log(msg, fields)
	}
}

// ErrNoFio is wrapped by the error of a node run on a node without fio.
var ErrNoFio = errors.New("fio is not installed")

// Run checks that fio is installed and Dir is a directory, runs fio in a run directory below Dir,
// and removes that directory whatever happens (with a context of its own when ctx has ended). It
// returns fio's stdout followed by its stderr; a cleanup problem comes back as cleanupErr.
func (r nodeRun) Run(ctx context.Context) (out []byte, runErr, cleanupErr error) {
	runDir := path.Join(r.Dir, runDirPrefix+r.RunID)
	args, err := fio.Args(r.Spec, runDir)
	if err != nil {
		return nil, err, nil
	}
	version, err := r.Host.RunShort(ctx, node.Script(fioCheckScript))
	var exitErr *node.ExitError
	switch {
	case errors.As(err, &exitErr) && exitErr.ExitCode == 127:
		return nil, fmt.Errorf("%w on node %q (%s): install it there (Debian/Ubuntu: apt-get install fio; RHEL: dnf install fio), "+
			"or benchmark through a storage_class or claim, which run fio in a pod", ErrNoFio, r.Node, r.Host), nil
	case err != nil:
		return nil, fmt.Errorf("checking for fio on node %q: %w", r.Node, err), nil
	}
	r.log("fio found on the node", map[string]any{"node": r.Node, "version": strings.TrimSpace(string(version))})

	fi, err := r.Host.Stat(ctx, r.Dir)
	switch {
	case err != nil:
		return nil, fmt.Errorf("checking node_path on node %q: %w", r.Node, err), nil
	case !fi.Exists:
		return nil, fmt.Errorf("node_path %s does not exist on node %q: create it, or name an existing directory", r.Dir, r.Node), nil
	case !fi.IsDir():
		return nil, fmt.Errorf("node_path %s on node %q is not a directory (mode %s)", r.Dir, r.Node, fi.Mode), nil
	}

	if err := r.Host.MkdirAll(ctx, runDir, node.DirOptions{Mode: 0o700}); err != nil {
		return nil, fmt.Errorf("making the run directory on node %q: %w", r.Node, err), nil
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		r.log("removing the run directory", map[string]any{"node": r.Node, "dir": runDir})
		if _, err := r.Host.RunShort(cctx, node.Script(removeRunDirScript, runDir)); err != nil {
			cleanupErr = fmt.Errorf("removing %s on node %q: %w", runDir, r.Node, err)
		}
	}()

	opts := node.ExecOptions{}
	if d, ok := ctx.Deadline(); ok {
		// The target's command timeout is meant for short commands; fio runs as long as the read may.
		opts.Timeout = max(time.Until(d), time.Second)
	} else {
		opts.Timeout = totalRuntime(r.Spec) + 10*time.Minute
	}
	r.log("running fio on the node", map[string]any{"node": r.Node, "dir": runDir, "fio_args": strings.Join(args, " ")})
	res, err := r.Host.Exec(ctx, node.NewCommand("fio", args...), opts)
	if res != nil {
		out = append(append(out, res.Stdout...), res.Stderr...)
	}
	if err != nil && errors.As(err, &exitErr) {
		// fio ran and failed: its own message is in its output; the parser finds it.
		if _, perr := fio.Parse(out); perr != nil {
			return out, perr, nil
		}
	}
	if err != nil {
		return out, fmt.Errorf("running fio on node %q: %w", r.Node, err), nil
	}
	return out, nil, nil
}
