package node

import (
	"context"
	"fmt"
	"net"
)

// Dial opens a TCP connection to addr as the node sees it ("127.0.0.1:873": a port only the node
// itself can reach), carried over the host's pooled SSH connection (a direct-tcpip channel; the
// node's sshd must allow TCP forwarding, OpenSSH's default). The connection is encrypted between
// here and the node; from the node's sshd to addr it is plain TCP on the node.
func (h *Host) Dial(ctx context.Context, addr string) (net.Conn, error) {
	client, err := h.pool.client(ctx, h.conn, h.target.ConnectTimeout)
	if err != nil {
		return nil, err
	}
	c, err := client.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s on %s through SSH (does its sshd allow TCP forwarding, AllowTcpForwarding?): %w", addr, h, err)
	}
	return c, nil
}

// Listen asks the node's sshd to listen on addr ("127.0.0.1:0": a port of the node's loopback
// that sshd chooses) and hands each connection made to it on the node to the returned listener
// (a remote forward, ssh -R). Its Addr is the address the node listens on. Closing it stops the
// node's listener; so does the end of the pooled connection.
func (h *Host) Listen(ctx context.Context, addr string) (net.Listener, error) {
	client, err := h.pool.client(ctx, h.conn, h.target.ConnectTimeout)
	if err != nil {
		return nil, err
	}
	l, err := client.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening on %s on %s through SSH (does its sshd allow TCP forwarding, AllowTcpForwarding?): %w", addr, h, err)
	}
	return l, nil
}
