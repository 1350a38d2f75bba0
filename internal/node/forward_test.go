package node_test

import (
	"bufio"
	"io"
	"net"
	"strconv"
	"testing"

	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/acctest"
	"github.com/clusterstorage/terraform-provider-clusterstorage/internal/node"
)

// TestForward_ListenAndDial: a listener on the node's loopback (Listen) receives what a connection
// made through the node (Dial) to its port sends, both ways, over a real sshd; after the server
// dropped the pooled connection, both reconnect instead of failing.
func TestForward_ListenAndDial(t *testing.T) {
	s := acctest.StartSSHD(t)
	p := newPool(t, node.PoolOptions{})
	h := newHost(t, p, target(s))
	for round := range 2 {
		if round == 1 {
			s.DropConnections(t)
		}
		l, err := h.Listen(t.Context(), "127.0.0.1:0")
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		addr, ok := l.Addr().(*net.TCPAddr)
		if !ok || addr.Port == 0 {
			t.Fatalf("round %d: listening on %v", round, l.Addr())
		}
		go func() {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()                                //nolint:errcheck // the test's end
			line, _ := bufio.NewReader(c).ReadString('\n') //nolint:errcheck // an empty line fails the test
			_, _ = io.WriteString(c, "echo "+line)         //nolint:errcheck // as above
		}()
		c, err := h.Dial(t.Context(), "127.0.0.1:"+strconv.Itoa(addr.Port))
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if _, err := io.WriteString(c, "hello\n"); err != nil {
			t.Fatal(err)
		}
		got, err := bufio.NewReader(c).ReadString('\n')
		if err != nil || got != "echo hello\n" {
			t.Fatalf("round %d: read %q, %v", round, got, err)
		}
		_ = c.Close() //nolint:errcheck // done
		_ = l.Close() //nolint:errcheck // done
	}
	if got := p.Handshakes(); got != 2 {
		t.Errorf("handshakes = %d, want 2 (one reconnection after the drop)", got)
	}
}
