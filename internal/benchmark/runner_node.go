package benchmark

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/fio"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/node"
)

// nodeRunScript is a whole run on a node in one SSH session (each session costs a login): it checks
// that fio is installed (else exit 127) and that the node_path $1 is a directory (else exit
// nodePathStatus with a reason on stderr), makes the run directory $2 (else exit runDirStatus),
// runs fio with the other arguments, and removes the run directory whatever fio did, also when
// stopped (SIGTERM, as a cancelled command gets). It exits with fio's status.
const nodeRunScript = `base=$1 dir=$2; shift 2
command -v fio >/dev/null 2>&1 || exit 127
if [ ! -e "$base" ] && [ ! -L "$base" ]; then echo "clusterstorage-node-path: missing" >&2; exit 120; fi
if [ -L "$base" ] || [ ! -d "$base" ]; then
	printf 'clusterstorage-node-path: mode %s\n' "$(stat -c %A -- "$base")" >&2
	exit 120
fi
mkdir -m 700 -- "$dir" || exit 121
cleanup() { rm -rf -- "$dir" || echo "clusterstorage-cleanup: failed" >&2; }
pid=
trap 'if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null; wait "$pid"; fi; cleanup; exit 143' TERM INT HUP
fio "$@" &
pid=$!
wait "$pid"
rc=$?
cleanup
exit "$rc"`

// The exit statuses of nodeRunScript's own checks.
const (
	nodePathStatus = 120
	runDirStatus   = 121
)

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

// Run runs nodeRunScript: it checks that fio is installed and Dir is a directory, runs fio in a
// run directory below Dir, and removes that directory whatever happens. When the run did not end on
// its own (ctx ended, the connection dropped), the directory is removed again from here, with a
// context of its own. It returns fio's stdout followed by its stderr; a cleanup problem comes back
// as cleanupErr.
func (r nodeRun) Run(ctx context.Context) (out []byte, runErr, cleanupErr error) {
	runDir := path.Join(r.Dir, runDirPrefix+r.RunID)
	args, err := fio.Args(r.Spec, runDir)
	if err != nil {
		return nil, err, nil
	}
	opts := node.ExecOptions{}
	if d, ok := ctx.Deadline(); ok {
		// The target's command timeout is meant for short commands; fio runs as long as the read may.
		opts.Timeout = max(time.Until(d), time.Second)
	} else {
		opts.Timeout = TotalRuntime(r.Spec) + 10*time.Minute
	}
	r.log("running fio on the node", map[string]any{"node": r.Node, "dir": runDir, "fio_args": strings.Join(args, " ")})
	res, err := r.Host.Exec(ctx, node.Script(nodeRunScript, r.Dir, runDir).Arg(args...), opts)
	if res != nil {
		out = append(append(out, res.Stdout...), res.Stderr...)
	}
	var exitErr *node.ExitError
	switch {
	case errors.As(err, &exitErr) && exitErr.ExitCode == 127:
		return nil, fmt.Errorf("%w on node %q (%s): install it there (Debian/Ubuntu: apt-get install fio; RHEL: dnf install fio), "+
			"or benchmark through a storage_class or claim, which run fio in a pod", ErrNoFio, r.Node, r.Host), nil
	case errors.As(err, &exitErr) && exitErr.ExitCode == nodePathStatus:
		if strings.Contains(exitErr.Stderr, "clusterstorage-node-path: missing") {
			return nil, fmt.Errorf("node_path %s does not exist on node %q: create it, or name an existing directory", r.Dir, r.Node), nil
		}
		_, mode, _ := strings.Cut(exitErr.Stderr, "clusterstorage-node-path: mode ")
		return nil, fmt.Errorf("node_path %s on node %q is not a directory (mode %s)", r.Dir, r.Node, strings.TrimSpace(mode)), nil
	case errors.As(err, &exitErr) && exitErr.ExitCode == runDirStatus:
		return nil, fmt.Errorf("making the run directory on node %q: %w", r.Node, err), nil
	case err != nil && exitErr == nil:
		// Stopped, or the connection dropped: the script may not have removed the run directory.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		r.log("removing the run directory", map[string]any{"node": r.Node, "dir": runDir})
		if _, rmErr := r.Host.RunShort(cctx, node.Script(removeRunDirScript, runDir)); rmErr != nil {
			cleanupErr = fmt.Errorf("removing %s on node %q: %w", runDir, r.Node, rmErr)
		}
	}
	if bytes.Contains(out, []byte("clusterstorage-cleanup: failed")) {
		cleanupErr = fmt.Errorf("removing %s on node %q failed: %s", runDir, r.Node, lastLines(out, 5))
	}
	if exitErr != nil {
		// fio ran and failed: its own message is in its output; the parser finds it.
		if _, perr := fio.Parse(out); perr != nil {
			return out, perr, cleanupErr
		}
	}
	if err != nil {
		return out, fmt.Errorf("running fio on node %q: %w", r.Node, err), cleanupErr
	}
	return out, nil, cleanupErr
}
