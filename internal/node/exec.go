package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
)

// sessionRefusedTimeout is how long a command waits while sshd refuses new sessions.
const sessionRefusedTimeout = 30 * time.Second

// maxCapture caps how much of each output stream a Result keeps; beyond it output is dropped and
// Result.Truncated is set (ExecOptions.Stdout and Stderr still see all of it).
const maxCapture = 32 << 20

// maxErrorStderr caps how much stderr an ExitError shows; the end is kept, where errors usually are.
const maxErrorStderr = 4 << 10

// ErrSudoPasswordRequired is wrapped by the ExitError of a command that sudo refused to run because
// it wants a password.
var ErrSudoPasswordRequired = errors.New("sudo requires a password")

// ErrSudoMissing is wrapped by the ExitError of a command run with sudo on a node without sudo.
var ErrSudoMissing = errors.New("sudo is not installed")

// ErrConnectionLost is wrapped by the error of a command whose SSH connection ended before the
// command did: it may have run in part, in whole, or may still run. Callers retry only commands
// that may safely run twice (the next Run reconnects).
var ErrConnectionLost = errors.New("the connection was lost")

// Host runs commands on one Target over its pooled connection. It is safe for concurrent use.
type Host struct {
	pool   *Pool
	target Target
	conn   *conn
}

// Target returns the target, with defaults applied.
func (h *Host) Target() Target {
	return h.target
}

// String returns "user@host:port", after the node's name when the target has one:
// `node "n1" (root@10.0.0.1:22)`.
func (h *Host) String() string {
	if h.target.Node != "" {
		return fmt.Sprintf("node %q (%s)", h.target.Node, h.target.String())
	}
	return h.target.String()
}

// ExecOptions are the optional inputs of Exec.
type ExecOptions struct {
	// Stdin is sent to the command's standard input; nil sends nothing (the command reads EOF).
	Stdin io.Reader
	// Stdout and Stderr, when set, also receive the output as it arrives (for progress logging).
	Stdout, Stderr io.Writer
	// Timeout bounds this command, replacing Target.CommandTimeout; 0 keeps the target's. Commands
	// that may run long (a copy, a benchmark) set it, so that the short default does not apply.
	Timeout time.Duration
}

// Result is what a finished command produced.
type Result struct {
	// Command is the command as run, with secrets redacted.
	Command string
	// Stdout and Stderr are the command's output (at most 32 MiB each; see Truncated).
	Stdout, Stderr []byte
	// Truncated is true when output beyond the cap was dropped.
	Truncated bool
	// ExitCode is the exit status, or -1 when the command was killed by a signal.
	ExitCode int
	// Duration is how long the command ran.
	Duration time.Duration
}

// ExitError is returned for a command that ran and exited with a non-zero status or a signal.
type ExitError struct {
	// Host is the host as Host.String gives it: "user@host:port", after the node's name if known.
	Host string
	// Command is the command as run, with secrets redacted.
	Command string
	// ExitCode is the exit status, or -1 when killed by a signal.
	ExitCode int
	// Signal is the signal that killed the command ("TERM", ...), if any.
	Signal string
	// Stderr is the command's stderr, trimmed, and shortened to its last 4 KiB.
	Stderr string
	// Hint, when set, says what to do about a recognised failure (sudo wanting a password...).
	Hint string
	// cause is the sentinel error (ErrSudoPasswordRequired...) for a recognised failure.
	cause error
}

// Error names the command, the host, the status and stderr.
func (e *ExitError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "command %s on %s ", e.Command, e.Host)
	if e.Signal != "" {
		fmt.Fprintf(&b, "was killed by signal %s", e.Signal)
	} else {
		fmt.Fprintf(&b, "exited with status %d", e.ExitCode)
	}
	if e.Stderr != "" {
		fmt.Fprintf(&b, ": %s", e.Stderr)
	} else {
		b.WriteString(" (stderr was empty)")
	}
	if e.Hint != "" {
		fmt.Fprintf(&b, "\n%s", e.Hint)
	}
	return b.String()
}

// Unwrap returns the sentinel of a recognised failure (ErrSudoPasswordRequired, ErrSudoMissing),
// or nil.
func (e *ExitError) Unwrap() error { return e.cause }

// Run runs cmd with no stdin; see Exec.
func (h *Host) Run(ctx context.Context, cmd Command) (*Result, error) {
	return h.Exec(ctx, cmd, ExecOptions{})
}

// Exec runs cmd on the host, through `sudo -n --` when the target asks for sudo and its user is
// not root. A non-zero exit returns both the Result and an *ExitError. Every command has a
// deadline: opts.Timeout, else Target.CommandTimeout, else ctx's deadline, else the pool's
// DefaultCommandTimeout. When ctx ends or the timeout passes, the command's whole process group
// gets SIGTERM, then SIGKILL after 2s, and Exec returns an error naming the host and the command and
// wrapping context.Canceled or context.DeadlineExceeded. For that, every command runs
// under a small `sh -c` wrapper that reports its process id on stderr first (Exec removes that
// line), so nodes need a POSIX sh, as any Linux has.
func (h *Host) Exec(ctx context.Context, cmd Command, opts ExecOptions) (*Result, error) {
	sudo := h.sudo()
	if sudo {
		cmd = cmd.prefix("sudo", "-n", "--")
	}
	shown := cmd.String()
	// The wrapper adds nothing that can fail to render, so an error here is about cmd itself.
	line, err := cmd.prefix("sh", "-c", pidScript, "sh").Render()
	if err != nil {
		return nil, fmt.Errorf("command for %s: %w", h, err)
	}

	ctx, cancel := h.commandContext(ctx, opts.Timeout)
	defer cancel()

	session, err := h.session(ctx)
	if err != nil {
		return nil, fmt.Errorf("running %s on %s: %w", shown, h, err)
	}
	defer func() { <-h.conn.sessions }()

	fields := map[string]any{"host": h.String(), "command": shown}
	h.pool.log(ctx, "SSH command starting", fields)
	res, err := h.run(ctx, session, line, shown, sudo, opts)
	if res != nil {
		fields["exit_code"] = res.ExitCode
		fields["duration_ms"] = res.Duration.Milliseconds()
	}
	if err != nil {
		fields["error"] = err.Error()
	}
	h.pool.log(ctx, "SSH command finished", fields)

	var exitErr *ExitError
	if sudo && errors.As(err, &exitErr) {
		explainSudo(exitErr, h.target.User)
	}
	return res, err
}

// commandContext bounds one command: by timeout when set, else by Target.CommandTimeout, else by
// ctx's deadline, else by the pool's DefaultCommandTimeout.
func (h *Host) commandContext(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	why := ""
	if timeout <= 0 {
		timeout = h.target.CommandTimeout
	}
	if _, bounded := ctx.Deadline(); timeout <= 0 && !bounded {
		timeout = h.pool.opts.DefaultCommandTimeout
		why = " (the default limit for a command outside an operation with a timeout: is a mount on the node hung, or a process stuck?)"
	}
	if timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeoutCause(ctx, timeout, fmt.Errorf("timed out after %s%s: %w", timeout, why, context.DeadlineExceeded))
}

// session takes a session slot and opens a session, reconnecting once if the pooled connection
// turns out to be dead. The caller must give the slot back (receive from h.conn.sessions).
func (h *Host) session(ctx context.Context) (*ssh.Session, error) {
	select {
	case h.conn.sessions <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for a free SSH session: %w", context.Cause(ctx))
	}
	session, err := h.openSession(ctx)
	if err != nil {
		<-h.conn.sessions
		return nil, err
	}
	return session, nil
}

// openSession opens a session on the pooled connection. It reconnects once when the connection
// turns out to be dead, and waits while sshd refuses sessions for being at its MaxSessions: sshd
// frees a finished session's slot only after our close reaches it, so a caller taking the slot
// that was just given back may briefly find it still taken.
func (h *Host) openSession(ctx context.Context) (*ssh.Session, error) {
	reconnected := false
	backoff := 5 * time.Millisecond
	refusedSince := time.Time{}
	for {
		if h.pool.ctx.Err() != nil {
			return nil, ErrPoolClosed
		}
		client, err := h.pool.client(ctx, h.conn, h.target.ConnectTimeout)
		if err != nil {
			return nil, err
		}
		session, err := client.NewSession()
		if err == nil {
			h.conn.opened.Add(1)
			return session, nil
		}
		var refused *ssh.OpenChannelError
		switch {
		case errors.As(err, &refused) && (refused.Reason == ssh.Prohibited || refused.Reason == ssh.ConnectionFailed):
			// OpenSSH answers "open failed" (ConnectionFailed) at its MaxSessions.
			if refusedSince.IsZero() {
				refusedSince = time.Now()
			}
			if time.Since(refusedSince) > sessionRefusedTimeout {
				return nil, fmt.Errorf("opening an SSH session: the server kept refusing new sessions for %s (its sshd_config MaxSessions may be lower than the pool's MaxSessions, %d): %w",
					sessionRefusedTimeout, cap(h.conn.sessions), err)
			}
			timer := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				timer.Stop()
				return nil, fmt.Errorf("waiting for the server to accept a new SSH session: %w", context.Cause(ctx))
			case <-timer.C:
			}
			backoff = min(2*backoff, 200*time.Millisecond)
		case errors.As(err, &refused) || reconnected:
			return nil, fmt.Errorf("opening an SSH session: %w", err)
		default:
			// The connection died (the server restarted, the network dropped it) since it was
			// last used: replace it once.
			reconnected = true
			h.conn.forget(client)
			h.pool.log(ctx, "SSH connection lost, reconnecting", map[string]any{"endpoint": h.conn.endpoint.String(), "error": err.Error()})
		}
	}
}

// run starts line on session and waits for it or for ctx.
func (h *Host) run(ctx context.Context, session *ssh.Session, line, shown string, sudo bool, opts ExecOptions) (*Result, error) {
	defer session.Close() //nolint:errcheck // the session is finished either way; Close often reports io.EOF.
	stdout, stderr := &capture{}, &capture{}
	pid := newPIDSniffer(tee(stderr, opts.Stderr))
	// The session's copy goroutines can outlive a stop that could not end the command: the gates
	// cut them off from the Result and the caller's writers before run returns.
	outGate, errGate := &gate{w: tee(stdout, opts.Stdout)}, &gate{w: pid}
	session.Stdin = opts.Stdin
	session.Stdout = outGate
	session.Stderr = errGate

	res := &Result{Command: shown}
	start := time.Now()
	if err := session.Start(line); err != nil {
		return nil, fmt.Errorf("starting %s on %s: %w", shown, h, err)
	}
	done := make(chan error, 1)
	go func() { done <- session.Wait() }()

	var waitErr, stopErr error
	cancelled := false
	select {
	case waitErr = <-done:
		pid.flush()
	case <-ctx.Done():
		cancelled = true
		stopErr = h.stop(ctx, session, done, pid, sudo)
	}
	res.Duration = time.Since(start)
	outGate.close()
	errGate.close()
	res.Stdout, res.Stderr = stdout.buf.Bytes(), stderr.buf.Bytes()
	res.Truncated = stdout.truncated || stderr.truncated

	if cancelled {
		res.ExitCode = -1
		if stopErr != nil {
			return res, fmt.Errorf("command %s on %s stopped: %w; stopping it on the node failed, it may still run: %v", shown, h, context.Cause(ctx), stopErr)
		}
		return res, fmt.Errorf("command %s on %s stopped: %w", shown, h, context.Cause(ctx))
	}
	var exit *ssh.ExitError
	var missing *ssh.ExitMissingError
	switch {
	case waitErr == nil, errors.Is(waitErr, io.EOF):
		// io.EOF: the command exited 0 without reading all of stdin, as `true < file` does.
		return res, nil
	case errors.As(waitErr, &exit):
		res.ExitCode = exit.ExitStatus()
		e := &ExitError{Host: h.String(), Command: shown, ExitCode: exit.ExitStatus(), Signal: exit.Signal(), Stderr: tail(res.Stderr)}
		if e.Signal != "" {
			res.ExitCode, e.ExitCode = -1, -1
		}
		return res, e
	case errors.As(waitErr, &missing):
		res.ExitCode = -1
		return res, fmt.Errorf("command %s on %s: %w before it finished (it may still run): %w", shown, h, ErrConnectionLost, waitErr)
	default:
		res.ExitCode = -1
		return res, fmt.Errorf("command %s on %s: %w", shown, h, waitErr)
	}
}

// pidScript wraps every command: it reports the process id on stderr's first line, for stop, and
// then becomes the command.
const pidScript = `printf 'clusterstorage-pid:%s\n' "$$" >&2; exec "$@"`

// killScript ends process $1 and its process group: SIGTERM, up to 2s to exit, then SIGKILL. sshd
// starts each command as a session leader, so the group holds everything the command started.
// The group is only signalled when $1 still leads its session: a process id reused since is left
// alone.
const killScript = `s=$(cat "/proc/$1/stat" 2>/dev/null) || exit 0
s=${s##*) }
set -- "$1" $s
pgid=$4 sid=$5
if [ "$pgid" != "$sid" ]; then kill -s TERM "$1" 2>/dev/null; exit 0; fi
kill -s TERM -- "-$pgid" 2>/dev/null || exit 0
i=0
while [ $i -lt 20 ] && kill -s 0 -- "-$pgid" 2>/dev/null; do sleep 0.1; i=$((i+1)); done
kill -s KILL -- "-$pgid" 2>/dev/null
exit 0`

// stop ends a cancelled command. sshd delivers SSH signal requests only for logins other than
// root (it needs privilege separation for them), so after sending one the command's process group
// is killed by process id from a second session, through sudo when the command used it. The
// session is closed first, giving its slot to the second one.
func (h *Host) stop(ctx context.Context, session *ssh.Session, done <-chan error, pid *pidSniffer, sudo bool) error {
	_ = session.Signal(ssh.SIGTERM) //nolint:errcheck // best effort; the kill below does the work.
	var id int
	timer := time.NewTimer(time.Second)
	select {
	case id = <-pid.id:
	case <-timer.C:
	}
	timer.Stop()
	_ = session.Close() //nolint:errcheck // the command is being abandoned.
	if id == 0 {
		return errors.New("its process id was never reported")
	}

	killCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	kill := Script(killScript, strconv.Itoa(id))
	if sudo {
		kill = kill.prefix("sudo", "-n", "--")
	}
	line, err := kill.Render()
	if err != nil {
		return err
	}
	killSession, err := h.openSession(killCtx)
	if err != nil {
		return err
	}
	defer killSession.Close() //nolint:errcheck // finished either way.
	var stderr bytes.Buffer
	killSession.Stderr = &stderr
	if err := killSession.Run(line); err != nil {
		return fmt.Errorf("%w: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	fields := map[string]any{"host": h.String(), "pid": id}
	select {
	case err := <-done:
		if err != nil {
			fields["exit"] = err.Error()
		}
	case <-killCtx.Done():
		fields["exit"] = "not seen within 10s"
	}
	h.pool.log(ctx, "SSH command stopped", fields)
	return nil
}

// pidSniffer takes the line written by pidScript off the stderr stream and reports the process id
// in it; everything else goes to w. Lines before it come from the node's login environment (a
// shell startup file, an sshd ForceCommand wrapper) and are passed on; after pidScanLimit bytes
// of them it stops looking, and the command cannot be stopped by process id.
type pidSniffer struct {
	w  io.Writer
	id chan int
	// buf holds the start of a line that may be the pid line.
	buf []byte
	// midLine is set while passing on a line too long to be the pid line.
	midLine bool
	// passed counts the bytes passed on before the pid line.
	passed int
	seen   bool
}

func newPIDSniffer(w io.Writer) *pidSniffer {
	return &pidSniffer{w: w, id: make(chan int, 1)}
}

const (
	pidPrefix = "clusterstorage-pid:"
	// pidLineMax is longer than any pid line.
	pidLineMax = 64
	// pidScanLimit is how much output before the pid line is looked through.
	pidScanLimit = 16 << 10
)

func (s *pidSniffer) Write(p []byte) (int, error) {
	n := len(p)
	if s.seen {
		if _, err := s.w.Write(p); err != nil {
			return 0, err
		}
		return n, nil
	}
	s.buf = append(s.buf, p...)
	for !s.seen && len(s.buf) > 0 {
		i := bytes.IndexByte(s.buf, '\n')
		var out []byte
		switch {
		case s.midLine && i < 0:
			out, s.buf = s.buf, nil
		case s.midLine:
			out, s.buf, s.midLine = s.buf[:i+1], s.buf[i+1:], false
		case i < 0 && len(s.buf) < pidLineMax:
			return n, nil // the line is not complete yet
		case i < 0:
			out, s.buf, s.midLine = s.buf, nil, true
		default:
			if id, ok := parsePIDLine(s.buf[:i]); ok {
				s.id <- id
				s.seen = true
				s.buf = s.buf[i+1:]
				continue
			}
			out, s.buf = s.buf[:i+1], s.buf[i+1:]
		}
		if _, err := s.w.Write(out); err != nil {
			return 0, err
		}
		if s.passed += len(out); s.passed >= pidScanLimit {
			s.seen = true
		}
	}
	if s.seen && len(s.buf) > 0 {
		rest := s.buf
		s.buf = nil
		if _, err := s.w.Write(rest); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// parsePIDLine returns the process id of a pid line.
func parsePIDLine(line []byte) (int, bool) {
	if !bytes.HasPrefix(line, []byte(pidPrefix)) {
		return 0, false
	}
	id, err := strconv.Atoi(string(line[len(pidPrefix):]))
	return id, err == nil && id > 0
}

// flush passes on what was held back while waiting for a complete line (when the command ended
// before writing one, e.g. a shell that failed to start).
func (s *pidSniffer) flush() {
	if !s.seen && len(s.buf) > 0 {
		s.seen = true
		_, _ = s.w.Write(s.buf) //nolint:errcheck // capture never fails; a caller's writer failing only loses a copy.
		s.buf = nil
	}
}

// explainSudo recognises sudo's own failures and says what to do.
func explainSudo(e *ExitError, user string) {
	switch {
	case strings.Contains(e.Stderr, "sudo: a password is required"),
		strings.Contains(e.Stderr, "sudo: a terminal is required"),
		strings.Contains(e.Stderr, "is not in the sudoers file"),
		strings.Contains(e.Stderr, "is not allowed to run sudo"):
		e.cause = ErrSudoPasswordRequired
		e.Hint = fmt.Sprintf("User %q must be able to run sudo without a password: add a sudoers rule on the node "+
			"such as \"%s ALL=(ALL) NOPASSWD: ALL\" in /etc/sudoers.d/%s (visudo -f), or connect as root.", user, user, user)
	case e.ExitCode == 127 && strings.Contains(e.Stderr, "sudo") && strings.Contains(e.Stderr, "not found"):
		e.cause = ErrSudoMissing
		e.Hint = "sudo is not installed on the node: install it, or connect as root."
	}
}

// tail trims s and keeps its last maxErrorStderr bytes.
func tail(s []byte) string {
	t := strings.TrimSpace(string(s))
	if len(t) > maxErrorStderr {
		t = "..." + t[len(t)-maxErrorStderr:]
	}
	return t
}

// capture keeps the first maxCapture bytes written to it.
type capture struct {
	buf       bytes.Buffer
	truncated bool
}

func (c *capture) Write(p []byte) (int, error) {
	room := maxCapture - c.buf.Len()
	if len(p) > room {
		c.truncated = true
		c.buf.Write(p[:max(room, 0)])
		return len(p), nil
	}
	c.buf.Write(p)
	return len(p), nil
}

// gate passes writes on to w until closed, and drops them after.
type gate struct {
	mu     sync.Mutex
	w      io.Writer
	closed bool
}

func (g *gate) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return len(p), nil
	}
	return g.w.Write(p)
}

// close stops the writes; once it returns, w is never written again.
func (g *gate) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

// tee writes to c and, when set, to w.
func tee(c *capture, w io.Writer) io.Writer {
	if w == nil {
		return c
	}
	return io.MultiWriter(c, w)
}
