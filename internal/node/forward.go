package node

import (
	"context"
	"fmt"
	"net"

	"golang.org/x/crypto/ssh"
)

// Dial opens a TCP connection to addr as the node sees it ("127.0.0.1:873": a port only the node
// itself can reach), carried over the host's pooled SSH connection (a direct-tcpip channel; the
// node's sshd must allow TCP forwarding, OpenSSH's default). The connection is encrypted between
// here and the node; from the node's sshd to addr it is plain TCP on the node. A pooled
// connection found dead is replaced once, as for a command.
func (h *Host) Dial(ctx context.Context, addr string) (net.Conn, error) {
	var c net.Conn
	err := h.onClient(ctx, func(client *ssh.Client) error {
		var err error
		c, err = client.DialContext(ctx, "tcp", addr)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("connecting to %s on %s through SSH (does its sshd allow TCP forwarding, AllowTcpForwarding?): %w", addr, h, err)
	}
	return c, nil
}

// Listen asks the node's sshd to listen on addr ("127.0.0.1:0": a port of the node's loopback
// that sshd chooses) and hands each connection made to it on the node to the returned listener
// (a remote forward, ssh -R). Its Addr is the address the node listens on. Closing it stops the
// node's listener; so does the end of the pooled connection. A pooled connection found dead is
// replaced once.
func (h *Host) Listen(ctx context.Context, addr string) (net.Listener, error) {
	var l net.Listener
	err := h.onClient(ctx, func(client *ssh.Client) error {
		var err error
		l, err = client.Listen("tcp", addr)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("listening on %s on %s through SSH (does its sshd allow TCP forwarding, AllowTcpForwarding?): %w", addr, h, err)
	}
	return l, nil
}

// onClient runs do on the pooled connection. When do fails and the connection does not answer a
// keepalive either (the node or the network dropped it since its last use), the connection is
// replaced and do runs once more; a refusal on a live connection is returned as it is.
func (h *Host) onClient(ctx context.Context, do func(*ssh.Client) error) error {
	for attempt := 0; ; attempt++ {
		if h.pool.ctx.Err() != nil {
			return ErrPoolClosed
		}
		client, err := h.pool.client(ctx, h.conn, h.target.ConnectTimeout)
		if err != nil {
			return err
		}
		err = do(client)
		if err == nil || attempt > 0 {
			return err
		}
		if _, _, kerr := client.SendRequest("keepalive@openssh.com", true, nil); kerr == nil {
			return err
		}
		h.conn.forget(client)
		h.pool.log(ctx, "SSH connection lost, reconnecting", map[string]any{"endpoint": h.conn.endpoint.String(), "error": err.Error()})
	}
}
