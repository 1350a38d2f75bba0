package node

import (
	"bytes"
	"testing"
)

func TestPIDSniffer(t *testing.T) {
	tests := []struct {
		name    string
		writes  []string
		wantPID int
		wantOut string
	}{
		{name: "pid line then output", writes: []string{"clusterstorage-pid:42\nerr\n"}, wantPID: 42, wantOut: "err\n"},
		{name: "pid line split over writes", writes: []string{"cluster", "storage-pid:4", "2\ne", "rr"}, wantPID: 42, wantOut: "err"},
		{name: "only the pid line", writes: []string{"clusterstorage-pid:7\n"}, wantPID: 7},
		{name: "no pid line", writes: []string{"sh: not found\n", "more"}, wantOut: "sh: not found\nmore"},
		{name: "bad pid", writes: []string{"clusterstorage-pid:x\nrest"}, wantOut: "clusterstorage-pid:x\nrest"},
		{name: "long first write without newline", writes: []string{string(bytes.Repeat([]byte("a"), 100))}, wantOut: string(bytes.Repeat([]byte("a"), 100))},
		{name: "unfinished short line is flushed", writes: []string{"partial"}, wantOut: "partial"},
		{name: "login output before the pid line", writes: []string{"motd\n", "clusterstorage-pid:9\nerr"}, wantPID: 9, wantOut: "motd\nerr"},
		{name: "a long line before the pid line", writes: []string{string(bytes.Repeat([]byte("a"), 100)), "b\nclusterstorage-pid:5\n", "x"},
			wantPID: 5, wantOut: string(bytes.Repeat([]byte("a"), 100)) + "b\nx"},
		{name: "a pid-like line after the pid line is output", writes: []string{"clusterstorage-pid:3\nclusterstorage-pid:9\n"}, wantPID: 3, wantOut: "clusterstorage-pid:9\n"},
		{name: "gives up after the scan limit", writes: []string{string(bytes.Repeat([]byte("a\n"), pidScanLimit/2)), "clusterstorage-pid:9\n"},
			wantOut: string(bytes.Repeat([]byte("a\n"), pidScanLimit/2)) + "clusterstorage-pid:9\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			s := newPIDSniffer(&out)
			for _, w := range tt.writes {
				n, err := s.Write([]byte(w))
				if err != nil || n != len(w) {
					t.Fatalf("Write(%q) = %d, %v", w, n, err)
				}
			}
			s.flush()
			if out.String() != tt.wantOut {
				t.Errorf("output %q, want %q", out.String(), tt.wantOut)
			}
			pid := 0
			select {
			case pid = <-s.id:
			default:
			}
			if pid != tt.wantPID {
				t.Errorf("pid %d, want %d", pid, tt.wantPID)
			}
		})
	}
}

func TestCapture(t *testing.T) {
	c := &capture{}
	big := bytes.Repeat([]byte("x"), maxCapture-1)
	if n, err := c.Write(big); n != len(big) || err != nil {
		t.Fatal(n, err)
	}
	if n, err := c.Write([]byte("yz")); n != 2 || err != nil {
		t.Fatal(n, err)
	}
	if c.buf.Len() != maxCapture || !c.truncated || c.buf.Bytes()[maxCapture-1] != 'y' {
		t.Errorf("captured %d bytes, truncated %v", c.buf.Len(), c.truncated)
	}
}
