package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// ErrDirNotEmpty is wrapped by RemoveDir's error for a directory that still holds entries.
var ErrDirNotEmpty = errors.New("directory is not empty")

// FileInfo describes a path on a node, as Stat saw it.
type FileInfo struct {
	// Path is the path asked about.
	Path string
	// Exists is false when nothing is at Path; the other fields are zero then.
	Exists bool
	// Mode holds the type bits (fs.ModeDir, fs.ModeSymlink, ...) and the permission, setuid,
	// setgid and sticky bits. A symbolic link is described itself, not what it points to.
	Mode fs.FileMode
	// UID and GID are the numeric owner and group.
	UID, GID int
	// Size is the size in bytes.
	Size int64
	// Empty is true for a directory without entries.
	Empty bool
}

// IsDir reports whether Path is a directory (not a symbolic link to one).
func (fi FileInfo) IsDir() bool {
	return fi.Exists && fi.Mode.IsDir()
}

// statScript describes each path given, one record per path, each ended by a NUL byte: "missing",
// or the raw mode (hex), uid, gid and size, plus "empty" or "notempty" for a directory, or
// "error " and what went wrong. LC_ALL=C keeps error messages in English for matching.
//
// When every path exists (a refresh of volumes whose directories are there), one stat and one
// find describe them all: both take their operands in order, one line each, and the format
// holds no file name, so the lines line up with the paths (and their count is checked). Anything
// else (a path missing, either command failing for any path, a find without -printf) takes the
// loop, which runs both once per path and says what went wrong with each.
const statScript = `LC_ALL=C; export LC_ALL
format='%f %u %g %s'
nl='
'
# lines TEXT: whether TEXT (output of $(...), its last newline removed) has one line per path.
lines() {
	rest=$1$nl
	n=0
	while [ -n "$rest" ]; do
		rest=${rest#*"$nl"}
		n=$((n + 1))
	done
	[ "$n" -eq "$count" ]
}
count=$#
all=1
for p do
	if [ ! -e "$p" ] && [ ! -L "$p" ]; then
		all=
		break
	fi
done
if [ -n "$all" ] && [ $# -gt 0 ] &&
	stats=$(stat -c "$format" -- "$@" 2>/dev/null) &&
	empties=$(find "$@" -maxdepth 0 \( -empty -printf 'empty\n' \) -o -printf 'notempty\n' 2>/dev/null) &&
	lines "$stats" && lines "$empties"; then
	stats=$stats$nl
	empties=$empties$nl
	for p do
		printf '%s\n' "${stats%%"$nl"*}"
		stats=${stats#*"$nl"}
		empty=${empties%%"$nl"*}
		empties=${empties#*"$nl"}
		if [ -d "$p" ] && [ ! -L "$p" ]; then
			printf '%s\n' "$empty"
		fi
		printf '\0'
	done
	exit 0
fi
for p do
	if ! out=$(stat -c "$format" -- "$p" 2>&1); then
		case $out in
		*"No such file or directory"*) echo missing ;;
		*) printf 'error %s\n' "$out" ;;
		esac
	else
		printf '%s\n' "$out"
		if [ -d "$p" ] && [ ! -L "$p" ]; then
			if ! found=$(find "$p" -maxdepth 0 -empty 2>&1); then
				printf 'error %s\n' "$found"
			elif [ -n "$found" ]; then
				echo empty
			else
				echo notempty
			fi
		fi
	fi
	printf '\0'
done`

// Stat describes path (which must be absolute) without following a final symbolic link. A
// missing path is not an error: FileInfo.Exists is false.
//
// Concurrent Stats on one connection share commands (batch.go): a plan refreshing many volumes
// on a node opens a few SSH sessions, not one per volume.
func (h *Host) Stat(ctx context.Context, path string) (FileInfo, error) {
	if err := checkAbsolute(path); err != nil {
		return FileInfo{}, err
	}
	record, err := h.runBatched(ctx, batchStat, path)
	if err != nil {
		return FileInfo{}, fmt.Errorf("stat %s on %s: %w", path, h, err)
	}
	return parseStat(path, record)
}

// parseStat parses one of statScript's records.
func parseStat(path string, out []byte) (FileInfo, error) {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	fi := FileInfo{Path: path}
	if lines[0] == "missing" {
		return fi, nil
	}
	if msg, failed := strings.CutPrefix(string(out), "error "); failed {
		return FileInfo{}, errors.New(strings.TrimSpace(msg))
	}
	if len(lines) >= 2 && strings.HasPrefix(lines[1], "error ") {
		return FileInfo{}, errors.New(strings.TrimPrefix(strings.Join(lines[1:], "\n"), "error "))
	}
	fields := strings.Fields(lines[0])
	if len(fields) != 4 {
		return FileInfo{}, fmt.Errorf("unexpected stat output %q", out)
	}
	raw, err := strconv.ParseUint(fields[0], 16, 32)
	if err != nil {
		return FileInfo{}, fmt.Errorf("unexpected mode in stat output %q: %w", out, err)
	}
	if fi.UID, err = strconv.Atoi(fields[1]); err != nil {
		return FileInfo{}, fmt.Errorf("unexpected uid in stat output %q: %w", out, err)
	}
	if fi.GID, err = strconv.Atoi(fields[2]); err != nil {
		return FileInfo{}, fmt.Errorf("unexpected gid in stat output %q: %w", out, err)
	}
	if fi.Size, err = strconv.ParseInt(fields[3], 10, 64); err != nil {
		return FileInfo{}, fmt.Errorf("unexpected size in stat output %q: %w", out, err)
	}
	fi.Exists = true
	fi.Mode = fromUnixMode(uint32(raw))
	if fi.Mode.IsDir() {
		if len(lines) != 2 || (lines[1] != "empty" && lines[1] != "notempty") {
			return FileInfo{}, fmt.Errorf("unexpected stat output %q for a directory", out)
		}
		fi.Empty = lines[1] == "empty"
	}
	return fi, nil
}

// Unix mode bits (sys/stat.h), which fs.FileMode numbers differently.
const (
	unixTypeMask = 0o170000
	unixDir      = 0o040000
	unixSymlink  = 0o120000
	unixFIFO     = 0o010000
	unixSocket   = 0o140000
	unixCharDev  = 0o020000
	unixBlockDev = 0o060000
	unixSetuid   = 0o4000
	unixSetgid   = 0o2000
	unixSticky   = 0o1000
)

// fromUnixMode converts a st_mode to an fs.FileMode.
func fromUnixMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & unixTypeMask {
	case unixDir:
		mode |= fs.ModeDir
	case unixSymlink:
		mode |= fs.ModeSymlink
	case unixFIFO:
		mode |= fs.ModeNamedPipe
	case unixSocket:
		mode |= fs.ModeSocket
	case unixCharDev:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case unixBlockDev:
		mode |= fs.ModeDevice
	}
	if m&unixSetuid != 0 {
		mode |= fs.ModeSetuid
	}
	if m&unixSetgid != 0 {
		mode |= fs.ModeSetgid
	}
	if m&unixSticky != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}

// chmodArg renders the permission and special bits of m as chmod's numeric mode. It has five
// digits: GNU chmod keeps a directory's setuid and setgid bits for a shorter numeric mode.
func chmodArg(m fs.FileMode) string {
	n := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		n |= unixSetuid
	}
	if m&fs.ModeSetgid != 0 {
		n |= unixSetgid
	}
	if m&fs.ModeSticky != 0 {
		n |= unixSticky
	}
	return fmt.Sprintf("0%04o", n)
}

// DirOptions are the attributes MkdirAll gives the directory.
type DirOptions struct {
	// Mode is the permission (and setuid, setgid, sticky) bits; 0 leaves what mkdir and the umask
	// give a new directory, or an existing directory's mode, unchanged.
	Mode fs.FileMode
	// Owner is a user name or numeric uid; "" leaves it unchanged.
	Owner string
	// Group is a group name or numeric gid; "" leaves it unchanged.
	Group string
}

// mkdirScript makes each directory of its (path, chmod mode or "", chown spec or "") triples. A
// symbolic link at the path is refused: chmod would change the mode of whatever it points to
// (chown -h would not follow it, but chmod has no such option). Its records: the exit status, a
// newline and what went wrong.
const mkdirScript = `LC_ALL=C; export LC_ALL
one() {
	if [ -L "$1" ]; then printf '%s is a symbolic link, not a directory: its target is left alone\n' "$1"; return 1; fi
	mkdir -p -- "$1" || return 1
	if [ -n "$2" ]; then chmod "$2" -- "$1" || return 1; fi
	if [ -n "$3" ]; then chown -h -- "$3" "$1" || return 1; fi
}
while [ $# -ge 3 ]; do
	out=$(one "$1" "$2" "$3" 2>&1)
	printf '%s\n%s\0' "$?" "$out"
	shift 3
done`

// MkdirAll makes the directory path (absolute) and any missing parents, then sets its mode and
// owner as opts says (parents get the defaults). On an existing directory it only sets the mode and
// owner, so it is safe to repeat. A symbolic link at path is an error: the mode and owner of what
// it points to are never changed. Concurrent calls share commands (batch.go).
func (h *Host) MkdirAll(ctx context.Context, path string, opts DirOptions) error {
	if err := checkAbsolute(path); err != nil {
		return err
	}
	for what, name := range map[string]string{"owner": opts.Owner, "group": opts.Group} {
		if strings.ContainsAny(name, ": \t\n") {
			return fmt.Errorf("%s %q must be a name or a number, without ':' or spaces", what, name)
		}
	}
	if opts.Mode&^(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) != 0 {
		return fmt.Errorf("mode %s for directory %s: only permission, setuid, setgid and sticky bits can be set", opts.Mode, path)
	}
	mode := ""
	if opts.Mode != 0 {
		mode = chmodArg(opts.Mode)
	}
	owner := opts.Owner
	if opts.Group != "" {
		owner += ":" + opts.Group
	}
	record, err := h.runBatched(ctx, batchMkdir, path, mode, owner)
	if err != nil {
		return fmt.Errorf("making directory %s on %s: %w", path, h, err)
	}
	status, out, err := statusRecord(record)
	if err == nil && status != 0 {
		err = fmt.Errorf("exit status %d: %s", status, out)
	}
	if err != nil {
		return fmt.Errorf("making directory %s on %s: %w", path, h, err)
	}
	return nil
}

// removeDirScript removes each empty directory given; a missing one is success. Its records: the
// exit status, a newline and what went wrong.
const removeDirScript = `LC_ALL=C; export LC_ALL
for p do
	if [ ! -e "$p" ] && [ ! -L "$p" ]; then printf '0\n\0'; continue; fi
	out=$(rmdir -- "$p" 2>&1)
	printf '%s\n%s\0' "$?" "$out"
done`

// RemoveDir removes the directory path (absolute) if it is empty; a missing directory is success.
// A directory with entries is left alone and the error wraps ErrDirNotEmpty. Concurrent calls
// share commands (batch.go).
func (h *Host) RemoveDir(ctx context.Context, path string) error {
	if err := checkAbsolute(path); err != nil {
		return err
	}
	record, err := h.runBatched(ctx, batchRemoveDir, path)
	status, out := 0, ""
	if err == nil {
		status, out, err = statusRecord(record)
	}
	switch {
	case err != nil:
		return fmt.Errorf("removing directory %s on %s: %w", path, h, err)
	case status == 0:
		return nil
	case strings.Contains(out, "Directory not empty"):
		return fmt.Errorf("removing directory %s on %s: %w (it still holds data: empty it first if that data may go)", path, h, ErrDirNotEmpty)
	default:
		return fmt.Errorf("removing directory %s on %s: exit status %d: %s", path, h, status, out)
	}
}

// RealPath returns path (absolute) with every symbolic link in it resolved, as the node sees it
// (`realpath -m`: components that do not exist yet are kept as written). Concurrent calls share
// commands (batch.go).
func (h *Host) RealPath(ctx context.Context, path string) (string, error) {
	if err := checkAbsolute(path); err != nil {
		return "", err
	}
	record, err := h.runBatched(ctx, batchRealPath, path)
	status, out := 0, ""
	if err == nil {
		status, out, err = statusRecord(record)
	}
	switch {
	case err != nil:
		return "", fmt.Errorf("resolving %s on %s: %w", path, h, err)
	case status != 0:
		return "", fmt.Errorf("resolving %s on %s: realpath exited with status %d: %s", path, h, status, out)
	case !strings.HasPrefix(out, "/") || strings.Contains(out, "\n"):
		return "", fmt.Errorf("resolving %s on %s: unexpected output %q", path, h, out)
	}
	return out, nil
}

// realPathScript resolves each path given with `realpath -m`. Its records: the exit status, a
// newline and the resolved path (or what went wrong).
const realPathScript = `LC_ALL=C; export LC_ALL
for p do
	out=$(realpath -m -- "$p" 2>&1)
	printf '%s\n%s\0' "$?" "$out"
done`

// ReadFile returns the contents of the file path (absolute). A missing file returns an error
// wrapping fs.ErrNotExist.
func (h *Host) ReadFile(ctx context.Context, path string) ([]byte, error) {
	if err := checkAbsolute(path); err != nil {
		return nil, err
	}
	res, err := h.Run(ctx, NewCommand("env", "LC_ALL=C", "cat", "--", path))
	var exitErr *ExitError
	switch {
	case err == nil:
		return res.Stdout, nil
	case errors.As(err, &exitErr) && strings.Contains(exitErr.Stderr, "No such file or directory"):
		return nil, fmt.Errorf("reading %s on %s: %w", path, h, fs.ErrNotExist)
	default:
		return nil, fmt.Errorf("reading %s on %s: %w", path, h, err)
	}
}

// writeFileScript writes stdin to $1 with mode $2: through a symbolic link to the file it points
// to (the link stays), via a temporary file in that file's directory that is flushed to disk
// before it is renamed over the file, and the directory flushed after, so that neither readers
// nor a crash ever find a partial or empty file. `sync FILE` needs coreutils 8.24 (2015); older
// ones sync everything instead.
const writeFileScript = `umask 077
target=$1
if [ -L "$target" ]; then target=$(readlink -f -- "$1") || exit 1; fi
dir=$(dirname -- "$target") || exit 1
tmp=$(mktemp "$target.XXXXXX") || exit 1
trap 'rm -f -- "$tmp"' EXIT
cat > "$tmp" || exit 1
chmod "$2" -- "$tmp" || exit 1
sync -- "$tmp" 2>/dev/null || sync || exit 1
mv -f -- "$tmp" "$target" || exit 1
trap - EXIT
sync -- "$dir" 2>/dev/null || sync`

// WriteFile replaces the file path (absolute) with data and mode (permission bits), atomically and
// durably: the data goes to a temporary file in the same directory, flushed to disk, then renamed
// over the file, and the directory is flushed. When path is a symbolic link, the file it points
// to is replaced and the link kept. The data travels on stdin, never on a command line.
func (h *Host) WriteFile(ctx context.Context, path string, data []byte, mode os.FileMode) error {
	if err := checkAbsolute(path); err != nil {
		return err
	}
	if mode&^fs.ModePerm != 0 {
		return fmt.Errorf("mode %s for file %s: only permission bits can be set", mode, path)
	}
	_, err := h.Exec(ctx, Script(writeFileScript, path, chmodArg(mode)), ExecOptions{Stdin: bytes.NewReader(data)})
	if err != nil {
		return fmt.Errorf("writing %s on %s: %w", path, h, err)
	}
	return nil
}

// checkAbsolute rejects relative paths: they would depend on the login directory. An absolute
// path never starts with '-', so no command can take it for an option.
func checkAbsolute(path string) error {
	if !strings.HasPrefix(path, "/") {
		return fmt.Errorf("path %q must be absolute", path)
	}
	return nil
}
