package node

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
)

// A worker shell is one long-lived `sh` per connection (and sudo setting) that runs the batched
// file operations' commands (batch.go) one after another. A command then costs a line written to
// the shell and its output read back, instead of a session of its own: a fork of sshd and a start
// of the login user's shell, which is ~100 ms where the shell's startup files do much (a `~/.bashrc`
// starting pyenv or nvm). While open, the shell holds one of the connection's session slots; it
// closes after shellIdle without commands. A shell that cannot start, dies, or whose command must
// be stopped is closed, and its commands run in sessions of their own, as every other command does.

var (
	// shellIdle is how long a worker shell stays open without commands (a variable for tests).
	shellIdle = 15 * time.Second
	// shellRetryAfter is how long after a worker shell failed to start the next one is tried.
	shellRetryAfter = 30 * time.Second
)

// shellMarkerPrefix starts the line a worker shell writes after each command: the prefix, a random
// word of the shell's own (so no command's output can end a command early), a space, the status.
const shellMarkerPrefix = "clusterstorage-done-"

// workerShell is a connection's worker shell for one sudo setting.
type workerShell struct {
	mu   sync.Mutex // held while a command runs in the shell, and while it starts or closes
	open *shellSession
	// uses counts the commands run, so an idle timer armed before one does not close the shell.
	uses     int
	idle     *time.Timer
	failedAt time.Time
	// started counts the shells started, for tests.
	started int
}

// shellSession is one running worker shell.
type shellSession struct {
	session *ssh.Session
	stdin   io.WriteCloser
	stdout  *bufio.Reader
	stderr  *gate // the shell's own stderr (startup noise, sudo's refusal), kept in errBuf
	errBuf  *capture
	pid     *pidSniffer
	done    chan error // session.Wait's result
	marker  []byte     // shellMarkerPrefix and the random word, then a space
	// releaseSlot gives the connection's session slot back, once (close).
	releaseSlot func()
	closed      sync.Once
}

func (h *Host) workerShell() *workerShell {
	sudo := 0
	if h.sudo() {
		sudo = 1
	}
	return &h.conn.shells[sudo]
}

func (h *Host) sudo() bool { return h.target.Sudo && h.target.User != "root" }

// RunShort runs cmd, a short command that reads no stdin, in the connection's worker shell, and
// returns its stdout and stderr together. Without a worker shell (the pool allows a single session
// per connection, or the shell cannot start) it runs in a session of its own. A non-zero exit
// returns an *ExitError; a command that the timeout or ctx stops fails as Exec's do. A command that
// may run long belongs in Run or Exec: the shell runs one command at a time, and the batched file
// operations wait behind it.
func (h *Host) RunShort(ctx context.Context, cmd Command) ([]byte, error) {
	if cap(h.conn.sessions) < 2 {
		// The shell would hold the only session.
		return h.runAlone(ctx, cmd)
	}
	w := h.workerShell()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.uses++
	if w.idle != nil {
		w.idle.Stop()
	}
	defer w.armIdle()

	if w.open == nil {
		if !w.failedAt.IsZero() && time.Since(w.failedAt) < shellRetryAfter {
			return h.runAlone(ctx, cmd)
		}
		s, err := h.startShell(ctx)
		if err != nil {
			w.failedAt = time.Now()
			h.pool.log(ctx, "SSH worker shell could not start; commands run in sessions of their own", map[string]any{"host": h.String(), "error": err.Error()})
			return h.runAlone(ctx, cmd)
		}
		w.open, w.failedAt = s, time.Time{}
		w.started++
	}

	out, usable, err := h.inShell(ctx, w.open, cmd)
	if usable {
		return out, err
	}
	w.open.close()
	w.open = nil
	var stopped *stoppedError
	if errors.As(err, &stopped) {
		return nil, stopped.err
	}
	// The shell broke (it was killed, or the connection dropped): run the command anew. The batched
	// commands are safe to run again (a mkdir -p, an rmdir that finds the directory gone).
	h.pool.log(ctx, "SSH worker shell lost; running the command in a session of its own", map[string]any{"host": h.String(), "error": err.Error()})
	return h.runAlone(ctx, cmd)
}

// runAlone runs cmd in a session of its own, with stdout and stderr together as RunShort gives them.
func (h *Host) runAlone(ctx context.Context, cmd Command) ([]byte, error) {
	res, err := h.Run(ctx, cmd)
	if res == nil {
		return nil, err
	}
	return append(res.Stdout, res.Stderr...), err
}

// stoppedError is a command in the worker shell that ctx or its timeout stopped.
type stoppedError struct{ err error }

func (e *stoppedError) Error() string { return e.err.Error() }

// armIdle closes the shell after shellIdle unless a command runs before. w.mu is held.
func (w *workerShell) armIdle() {
	if w.open == nil {
		w.idle = nil
		return
	}
	uses := w.uses
	w.idle = time.AfterFunc(shellIdle, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.uses == uses && w.open != nil {
			w.open.close()
			w.open = nil
		}
	})
}

// startShell opens a session running `sh` (through sudo when the target asks for it) reading
// commands from stdin, and waits until it answers.
func (h *Host) startShell(ctx context.Context) (*shellSession, error) {
	cmd := NewCommand("sh")
	if h.sudo() {
		cmd = cmd.prefix("sudo", "-n", "--")
	}
	line, err := cmd.prefix("sh", "-c", pidScript, "sh").Render()
	if err != nil {
		return nil, err
	}
	word := make([]byte, 12)
	if _, err := rand.Read(word); err != nil {
		return nil, err
	}
	ctx, cancel := h.commandContext(ctx, h.target.ConnectTimeout)
	defer cancel()
	session, err := h.session(ctx)
	if err != nil {
		return nil, err
	}
	s := &shellSession{
		session: session,
		errBuf:  &capture{},
		done:    make(chan error, 1),
		marker:  []byte(shellMarkerPrefix + hex.EncodeToString(word) + " "),
	}
	slot := h.conn.sessions
	started := false
	defer func() {
		if !started {
			s.close()
		}
	}()
	// The slot goes back when the shell closes, not when startShell returns.
	s.releaseSlot = func() { <-slot }
	if s.stdin, err = session.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := session.StdoutPipe()
	if err != nil {
		return nil, err
	}
	s.stdout = bufio.NewReader(stdout)
	s.stderr = &gate{w: s.errBuf}
	s.pid = newPIDSniffer(s.stderr)
	session.Stderr = s.pid
	if err := session.Start(line); err != nil {
		return nil, err
	}
	go func() { s.done <- session.Wait() }()

	// The first answer shows the shell reads commands; what the login wrote before it is dropped.
	if _, _, err := h.inShell(ctx, s, Command{}); err != nil {
		s.stderr.close()
		if msg := tail(s.errBuf.buf.Bytes()); msg != "" {
			err = fmt.Errorf("%w: %s", err, msg)
		}
		return nil, err
	}
	started = true
	return s, nil
}

// close ends the shell: its stdin closes, so sh exits, and the session and its slot are let go.
func (s *shellSession) close() {
	s.closed.Do(func() {
		if s.stdin != nil {
			_ = s.stdin.Close() //nolint:errcheck // the shell is let go either way.
		}
		_ = s.session.Close() //nolint:errcheck // often io.EOF.
		s.releaseSlot()
	})
}

// inShell runs cmd in s (an empty cmd only asks s to answer) and returns its output, whether s can
// run more commands, and the command's error.
func (h *Host) inShell(ctx context.Context, s *shellSession, cmd Command) ([]byte, bool, error) {
	shown := cmd.String()
	line := ""
	if len(cmd.argv) > 0 {
		rendered, err := cmd.Render()
		if err != nil {
			return nil, true, fmt.Errorf("command for %s: %w", h, err)
		}
		line = rendered + " </dev/null 2>&1; "
	}
	line += fmt.Sprintf("printf '\\n%%s%%d\\n' %s \"$?\"\n", Quote(string(s.marker)))

	ctx, cancel := h.commandContext(ctx, 0)
	defer cancel()
	fields := map[string]any{"host": h.String(), "command": shown, "worker_shell": true}
	if len(cmd.argv) > 0 {
		h.pool.log(ctx, "SSH command starting", fields)
	}
	start := time.Now()
	type answer struct {
		out    []byte
		status int
		err    error
	}
	answered := make(chan answer, 1)
	go func() {
		if _, err := io.WriteString(s.stdin, line); err != nil {
			answered <- answer{err: fmt.Errorf("writing to the worker shell: %w", err)}
			return
		}
		out, status, err := s.read()
		answered <- answer{out, status, err}
	}()

	var a answer
	select {
	case a = <-answered:
	case <-ctx.Done():
		err := fmt.Errorf("command %s on %s stopped: %w", shown, h, context.Cause(ctx))
		if stopErr := h.stop(ctx, s.session, s.done, s.pid, h.sudo()); stopErr != nil {
			err = fmt.Errorf("command %s on %s stopped: %w; stopping it on the node failed, it may still run: %v", shown, h, context.Cause(ctx), stopErr)
		}
		fields["error"] = err.Error()
		h.pool.log(ctx, "SSH command finished", fields)
		return nil, false, &stoppedError{err}
	}
	fields["duration_ms"] = time.Since(start).Milliseconds()
	if a.err != nil {
		fields["error"] = a.err.Error()
	} else {
		fields["exit_code"] = a.status
	}
	if len(cmd.argv) > 0 {
		h.pool.log(ctx, "SSH command finished", fields)
	}
	if a.err != nil {
		return nil, false, a.err
	}
	if a.status != 0 {
		return a.out, true, &ExitError{Host: h.String(), Command: shown, ExitCode: a.status, Stderr: tail(a.out)}
	}
	return a.out, true, nil
}

// read reads one command's output, up to the line with s's marker, and the status on that line.
func (s *shellSession) read() ([]byte, int, error) {
	var out []byte
	for {
		line, err := s.stdout.ReadBytes('\n')
		if err == nil && bytes.HasPrefix(line, s.marker) {
			status, convErr := strconv.Atoi(string(line[len(s.marker) : len(line)-1]))
			if convErr != nil || len(out) == 0 {
				return nil, 0, fmt.Errorf("unexpected end of a command in the worker shell: %q", line)
			}
			// The newline before the marker is the shell's, not the command's.
			return out[:len(out)-1], status, nil
		}
		out = append(out, line...)
		if err != nil {
			return nil, 0, fmt.Errorf("reading from the worker shell: %w", err)
		}
		if len(out) > maxCapture {
			return nil, 0, fmt.Errorf("a command in the worker shell wrote more than %d bytes", maxCapture)
		}
	}
}
