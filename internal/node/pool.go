package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"
)

// Pool defaults.
const (
	// DefaultKeepaliveInterval is how often an idle connection is checked.
	DefaultKeepaliveInterval = 15 * time.Second
	// DefaultKeepaliveTimeout is how long a keepalive reply may take before the connection is
	// considered dead and closed.
	DefaultKeepaliveTimeout = 15 * time.Second
	// DefaultMaxSessions is how many commands run at once on one connection: two below OpenSSH's
	// default MaxSessions (10), beyond which sshd refuses new sessions. The spare ones absorb
	// sshd freeing a finished session's slot a moment late, and the session stopping a cancelled
	// command opens.
	DefaultMaxSessions = 8
	// DefaultCommandTimeout bounds a command that nothing else bounds: no ExecOptions.Timeout, no
	// Target.CommandTimeout and no deadline on the caller's context (a Terraform Read, or a plan's
	// refresh). A stat on a hung mount then fails after it instead of hanging the plan.
	DefaultCommandTimeout = 5 * time.Minute
)

// ErrPoolClosed is returned for commands run after Pool.Close.
var ErrPoolClosed = errors.New("SSH connection pool is closed")

// Logger receives the pool's debug events. Its signature matches tflog.Debug, so a caller can pass
// func(ctx context.Context, msg string, fields map[string]any) { tflog.Debug(ctx, msg, fields) }.
// Fields never hold secrets.
type Logger func(ctx context.Context, msg string, fields map[string]any)

// PoolOptions tunes a Pool. The zero value uses the defaults.
type PoolOptions struct {
	// Logger, when set, receives connection and command events.
	Logger Logger
	// KeepaliveInterval is how often each connection is checked (default:
	// DefaultKeepaliveInterval); negative disables keepalives.
	KeepaliveInterval time.Duration
	// KeepaliveTimeout is how long a keepalive reply may take (default: DefaultKeepaliveTimeout).
	KeepaliveTimeout time.Duration
	// MaxSessions caps concurrent commands per connection (default: DefaultMaxSessions); callers
	// beyond it wait for a free session. Raise it only for servers with a higher MaxSessions.
	MaxSessions int
	// DefaultCommandTimeout bounds a command run with no other bound (default:
	// DefaultCommandTimeout).
	DefaultCommandTimeout time.Duration
}

// Pool keeps one SSH connection per endpoint (user@host:port plus auth, host key policy and
// bastion) and shares it among concurrent callers: callers arriving while a connection is being
// made wait for that one handshake instead of starting their own. A connection found dead (the
// server dropped it, or a keepalive went unanswered) is replaced on next use. The zero Pool is not
// usable; use NewPool.
type Pool struct {
	opts PoolOptions
	// ctx is cancelled by Close, stopping handshakes in flight and keepalive loops.
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	conns  map[string]*conn
	closed bool

	handshakes atomic.Int64
}

// NewPool returns an empty pool.
func NewPool(opts PoolOptions) *Pool {
	if opts.KeepaliveInterval == 0 {
		opts.KeepaliveInterval = DefaultKeepaliveInterval
	}
	if opts.KeepaliveTimeout <= 0 {
		opts.KeepaliveTimeout = DefaultKeepaliveTimeout
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = DefaultMaxSessions
	}
	if opts.DefaultCommandTimeout <= 0 {
		opts.DefaultCommandTimeout = DefaultCommandTimeout
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Pool{opts: opts, ctx: ctx, cancel: cancel, conns: map[string]*conn{}}
}

// Handshakes returns how many SSH handshakes the pool has started (successful or not), bastion
// connections included.
func (p *Pool) Handshakes() int64 {
	return p.handshakes.Load()
}

// OpenConnections returns how many connections are currently open.
func (p *Pool) OpenConnections() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, c := range p.conns {
		c.mu.Lock()
		if c.client != nil {
			n++
		}
		c.mu.Unlock()
	}
	return n
}

// Close closes every connection and stops handshakes in progress. Commands running on them fail.
// Close is safe to call more than once.
func (p *Pool) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	conns := make([]*conn, 0, len(p.conns))
	for _, c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	p.cancel()
	// A connection through a bastion runs over a channel of the bastion's connection: it closes
	// first, while that channel still carries its goodbye (the other order, as a map's order
	// sometimes had it, made its Close fail with EOF).
	slices.SortFunc(conns, func(a, b *conn) int { return b.hops() - a.hops() })

	var errs []error
	for _, c := range conns {
		c.mu.Lock()
		client := c.client
		c.client = nil
		c.mu.Unlock()
		if client != nil {
			// EOF: the node had already closed the connection.
			if err := client.Close(); err != nil && !errors.Is(err, net.ErrClosed) && !errors.Is(err, io.EOF) {
				errs = append(errs, fmt.Errorf("closing SSH connection to %s: %w", c.endpoint, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Host returns a handle to run commands on t, applying t's defaults and validating it. It does not
// connect: the first command does.
func (p *Pool) Host(t Target) (*Host, error) {
	t = t.WithDefaults()
	if err := t.Validate(); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrPoolClosed
	}
	var via *conn
	if t.Bastion != nil {
		via = p.connLocked(*t.Bastion, nil)
	}
	return &Host{pool: p, target: t, conn: p.connLocked(t.Endpoint, via)}, nil
}

// connLocked returns the pool entry for e reached through via, creating it. p.mu must be held.
func (p *Pool) connLocked(e Endpoint, via *conn) *conn {
	var viaEndpoint *Endpoint
	if via != nil {
		viaEndpoint = &via.endpoint
	}
	key := e.poolKey(viaEndpoint)
	if c, ok := p.conns[key]; ok {
		return c
	}
	c := &conn{endpoint: e, via: via, sessions: make(chan struct{}, p.opts.MaxSessions)}
	p.conns[key] = c
	return c
}

func (p *Pool) log(ctx context.Context, msg string, fields map[string]any) {
	if p.opts.Logger != nil {
		p.opts.Logger(ctx, msg, fields)
	}
}

// conn is one pooled connection: the current client, or the handshake in progress.
type conn struct {
	endpoint Endpoint
	via      *conn
	// sessions is a semaphore holding one token per running command.
	sessions chan struct{}

	mu      sync.Mutex
	client  *ssh.Client
	dialing *dialAttempt

	// batches gather concurrent file operations into shared commands (batch.go), which run in
	// the worker shells, by sudo setting (shell.go).
	batches batches
	shells  [2]workerShell
	// opened counts the sessions opened, for tests.
	opened atomic.Int64
}

// hops is how many bastions c's connection goes through.
func (c *conn) hops() int {
	n := 0
	for v := c.via; v != nil; v = v.via {
		n++
	}
	return n
}

// dialAttempt is one handshake that any number of callers wait for.
type dialAttempt struct {
	done   chan struct{}
	client *ssh.Client
	err    error
}

// client returns c's connection, making it if there is none. Concurrent callers share one
// handshake; each stops waiting when its own ctx ends, while the handshake itself is bounded by
// timeout and by the pool's life.
func (p *Pool) client(ctx context.Context, c *conn, timeout time.Duration) (*ssh.Client, error) {
	c.mu.Lock()
	if c.client != nil {
		client := c.client
		c.mu.Unlock()
		return client, nil
	}
	attempt := c.dialing
	if attempt == nil {
		attempt = &dialAttempt{done: make(chan struct{})}
		c.dialing = attempt
		// The handshake outlives the caller that started it: others may be waiting for it.
		dialCtx, cancel := context.WithTimeoutCause(context.WithoutCancel(ctx), timeout,
			fmt.Errorf("connecting to %s timed out after %s: %w", c.endpoint.Addr(), timeout, context.DeadlineExceeded))
		stop := context.AfterFunc(p.ctx, cancel)
		go func() {
			defer cancel()
			defer stop()
			client, err := p.dial(dialCtx, c, timeout)
			if err == nil && p.ctx.Err() != nil {
				_ = client.Close() //nolint:errcheck // the pool closed during the handshake.
				client, err = nil, ErrPoolClosed
			}
			c.mu.Lock()
			attempt.client, attempt.err = client, err
			c.dialing = nil
			if err == nil {
				c.client = client
			}
			c.mu.Unlock()
			close(attempt.done)
		}()
	}
	c.mu.Unlock()

	select {
	case <-attempt.done:
		return attempt.client, attempt.err
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the SSH connection to %s: %w", c.endpoint, context.Cause(ctx))
	}
}

// dial makes a new connection for c: TCP (directly or through the bastion) and the SSH handshake.
func (p *Pool) dial(ctx context.Context, c *conn, timeout time.Duration) (*ssh.Client, error) {
	e := c.endpoint
	addr := e.Addr()
	verifier, err := newHostKeyVerifier(addr, e.HostKey)
	if err != nil {
		return nil, fmt.Errorf("SSH to %s: %w", e, err)
	}
	methods, closeAgent, err := authMethods(e.Auth)
	if err != nil {
		return nil, fmt.Errorf("SSH to %s: %w", e, err)
	}
	defer closeAgent()
	config := &ssh.ClientConfig{
		User:              e.User,
		Auth:              methods,
		HostKeyCallback:   verifier.check,
		HostKeyAlgorithms: verifier.algorithms,
		Timeout:           timeout,
	}

	start := time.Now()
	fields := map[string]any{"endpoint": e.String()}
	if c.via != nil {
		fields["bastion"] = c.via.endpoint.String()
	}
	p.log(ctx, "SSH connecting", fields)

	raw, err := p.dialTCP(ctx, c, addr, timeout)
	if err != nil {
		return nil, err
	}
	p.handshakes.Add(1)
	// ssh.NewClientConn takes no context: closing the connection stops it.
	stopClosing := context.AfterFunc(ctx, func() { _ = raw.Close() }) //nolint:errcheck // the handshake reports the failure.
	sshConn, chans, reqs, err := ssh.NewClientConn(raw, addr, config)
	if !stopClosing() {
		if err == nil {
			_ = sshConn.Close() //nolint:errcheck // abandoning a connection nobody will use.
		}
		return nil, fmt.Errorf("SSH handshake with %s: %w", e, context.Cause(ctx))
	}
	if err != nil {
		_ = raw.Close() //nolint:errcheck // already failing; the handshake error says why.
		return nil, handshakeError(e, verifier, err)
	}
	client := ssh.NewClient(sshConn, chans, reqs)
	fields["duration_ms"] = time.Since(start).Milliseconds()
	fields["server_version"] = string(sshConn.ServerVersion())
	p.log(ctx, "SSH connected", fields)
	go p.watch(context.WithoutCancel(ctx), c, client)
	return client, nil
}

// dialTCP opens the byte stream to addr: a TCP connection, or a tunnel through the bastion.
func (p *Pool) dialTCP(ctx context.Context, c *conn, addr string, timeout time.Duration) (net.Conn, error) {
	if c.via == nil {
		d := net.Dialer{Timeout: timeout}
		raw, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("connecting to %s: %w", addr, dialCause(ctx, err))
		}
		return raw, nil
	}
	for attempt := 0; ; attempt++ {
		bastion, err := p.client(ctx, c.via, timeout)
		if err != nil {
			return nil, fmt.Errorf("connecting to bastion %s for %s: %w", c.via.endpoint, addr, err)
		}
		raw, err := bastion.DialContext(ctx, "tcp", addr)
		if err == nil {
			return raw, nil
		}
		var refused *ssh.OpenChannelError
		if errors.As(err, &refused) || ctx.Err() != nil || attempt > 0 {
			return nil, fmt.Errorf("connecting to %s through bastion %s: %w", addr, c.via.endpoint, dialCause(ctx, err))
		}
		// The bastion connection died: replace it once.
		c.via.forget(bastion)
	}
}

// dialCause prefers the context's cause (which says what timed out) over a bare dial error.
func dialCause(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return err
}

// handshakeError turns the ssh package's handshake error into one that says what to do.
func handshakeError(e Endpoint, v *hostKeyVerifier, err error) error {
	if hkErr := v.lastFailure(); hkErr != nil {
		return hkErr
	}
	if strings.Contains(err.Error(), "unable to authenticate") {
		return &AuthError{Endpoint: e.String(), Methods: e.Auth.describe(), Err: err}
	}
	return fmt.Errorf("SSH handshake with %s: %w", e, err)
}

// watch forgets client once it closes, and checks it with keepalives: a connection whose server
// stops answering is closed, so that the next command reconnects instead of hanging.
func (p *Pool) watch(ctx context.Context, c *conn, client *ssh.Client) {
	closed := make(chan struct{})
	go func() {
		_ = client.Wait() //nolint:errcheck // any end of the connection is handled the same way.
		close(closed)
	}()
	var tick <-chan time.Time
	if p.opts.KeepaliveInterval > 0 {
		ticker := time.NewTicker(p.opts.KeepaliveInterval)
		defer ticker.Stop()
		tick = ticker.C
	}
	for {
		select {
		case <-closed:
			if c.forget(client) {
				p.log(ctx, "SSH connection closed", map[string]any{"endpoint": c.endpoint.String()})
			}
			return
		case <-p.ctx.Done():
			c.forget(client)
			return
		case <-tick:
			if err := keepalive(client, p.opts.KeepaliveTimeout); err != nil {
				p.log(ctx, "SSH keepalive failed, closing the connection", map[string]any{"endpoint": c.endpoint.String(), "error": err.Error()})
				c.forget(client)
			}
		}
	}
}

// keepalive sends one keepalive request and waits up to timeout for the reply. OpenSSH answers
// with a failure, which still proves the connection is alive.
func keepalive(client *ssh.Client, timeout time.Duration) error {
	reply := make(chan error, 1)
	go func() {
		_, _, err := client.SendRequest("keepalive@openssh.com", true, nil)
		reply <- err
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case err := <-reply:
		return err
	case <-timer.C:
		return fmt.Errorf("no keepalive reply within %s", timeout)
	}
}

// forget drops client from c if it is still c's current client, and closes it. It reports whether
// client was current.
func (c *conn) forget(client *ssh.Client) bool {
	c.mu.Lock()
	current := c.client == client
	if current {
		c.client = nil
	}
	c.mu.Unlock()
	_ = client.Close() //nolint:errcheck // the connection is being thrown away.
	return current
}
