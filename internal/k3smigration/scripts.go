package k3smigration

import (
	"context"
	"embed"
	"fmt"
	"strings"
	"time"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/node"
)

// The shell programs the migration runs on the node live in scripts/*.sh, checked by shellcheck
// (`make lint`). Each is constant text run with node.Script: every value (paths, the service
// name) arrives as a positional parameter and is only ever used double-quoted, so no user input is
// ever parsed by the node's shell; and each script first refuses arguments holding control
// characters.

// MarkerName is the file the migration keeps at the top of the directory it copies into. Its first
// line names the real path of the source the copy came from, so that an interrupted migration can
// be resumed into the same target (which is otherwise required to be empty); a second line
// "complete" says that k3s was switched to the copy and ran on it, after which no copy may write
// over it. It is the lock that keeps two copies from running into the same target at once. Every
// copy and comparison leaves it out.
const MarkerName = ".clusterstorage-k3s-migration"

//go:embed scripts/*.sh
var scriptFiles embed.FS

// script names one of the node-side programs: scripts/<name>.sh.
type script string

// The scripts; each file's opening comment says what it does and what its arguments are.
const (
	scriptPreflight      script = "preflight"
	scriptServices       script = "services"
	scriptCopy           script = "copy"
	scriptCopyBack       script = "copy_back"
	scriptDiff           script = "diff"
	scriptManifest       script = "manifest"
	scriptStop           script = "stop"
	scriptKill           script = "kill"
	scriptSymlinkSwap    script = "symlink_switch"
	scriptRename         script = "rename"
	scriptBindSwitch     script = "bind_switch"
	scriptUndoSwitch     script = "undo_switch"
	scriptState          script = "state"
	scriptRemoveTree     script = "remove_tree"
	scriptRemoveCopy     script = "remove_copy"
	scriptMarkComplete   script = "mark_complete"
	scriptCarry          script = "carry"
	scriptFixup          script = "fixup"
	scriptGuard          script = "guard"
	scriptCheckDatastore script = "check_datastore"
)

// allScripts lists every script, for the test that each file exists and includes what it needs.
var allScripts = []script{scriptPreflight, scriptServices, scriptCopy, scriptCopyBack, scriptDiff, scriptManifest, scriptStop,
	scriptKill, scriptSymlinkSwap, scriptRename, scriptBindSwitch, scriptUndoSwitch, scriptState, scriptRemoveTree,
	scriptRemoveCopy, scriptMarkComplete, scriptCarry, scriptFixup, scriptGuard, scriptCheckDatastore}

// includeLine is how a script includes lib.sh; text puts lib.sh's text in its place.
const includeLine = ". ./lib.sh\n"

// text is the script as the node runs it, lib.sh included.
func (s script) text() string {
	b, err := scriptFiles.ReadFile("scripts/" + string(s) + ".sh")
	if err != nil {
		panic(fmt.Sprintf("k3smigration: no script %s: %v", s, err)) // a programming error: TestScripts lists them all
	}
	lib, err := scriptFiles.ReadFile("scripts/lib.sh")
	if err != nil {
		panic(fmt.Sprintf("k3smigration: no lib.sh: %v", err))
	}
	return strings.Replace(string(b), includeLine, string(lib), 1)
}

// command is the script as a node command with args as its positional parameters.
func (s script) command(args ...string) node.Command {
	return node.Script(s.text(), args...)
}

// name is how errors name the script instead of quoting its whole text.
func (s script) name() string {
	return "the " + strings.ReplaceAll(string(s), "_", " ") + " script"
}

// remoteError is a node command's error with the command's script replaced by its name.
type remoteError struct {
	msg string
	err error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.err }

// longCommand bounds the scripts that walk or copy the whole data dir (the copies, the
// comparison, the listing) or wait for k3s to stop: the context's own deadline (the resource's
// timeouts, the stop timeout) bounds them first, not a per-command default meant for quick
// commands.
const longCommand = 24 * time.Hour

// longScripts are those scripts.
var longScripts = map[script]bool{scriptCopy: true, scriptCopyBack: true, scriptDiff: true, scriptManifest: true, scriptStop: true, scriptKill: true}

// runScript runs script s with args on host; an error names the script instead of quoting it.
func runScript(ctx context.Context, host *node.Host, s script, args ...string) (*node.Result, error) {
	cmd := s.command(args...)
	var opts node.ExecOptions
	if longScripts[s] {
		opts.Timeout = longCommand
	}
	res, err := host.Exec(ctx, cmd, opts)
	if err != nil {
		return res, &remoteError{msg: strings.ReplaceAll(err.Error(), cmd.String(), "("+s.name()+")"), err: err}
	}
	return res, nil
}

// runOn runs a plain command on host.
func runOn(ctx context.Context, host *node.Host, cmd node.Command) (*node.Result, error) {
	return host.Run(ctx, cmd)
}
