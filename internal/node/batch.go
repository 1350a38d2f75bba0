package node

import (
	"bytes"
	"context"
	"fmt"
	"sync"
)

// Every SSH command is a session of its own, and a session costs the node a fork of sshd and a
// start of the login user's shell (tens to hundreds of milliseconds when the shell's startup files
// do much) before the command runs. The small file operations that many resources do at once
// (Stat, RealPath, MkdirAll, RemoveDir: a plan or apply of many volumes on one node) therefore
// share commands: while one command of a kind runs on a connection, the calls of that kind that
// arrive wait, and then run together as the next one. The commands run in the connection's
// worker shell (shell.go), not in sessions of their own.

// batchKind is one kind of file operation that concurrent callers share commands for.
type batchKind int

const (
	batchStat batchKind = iota
	batchRealPath
	batchMkdir
	batchRemoveDir
	numBatchKinds
)

// batchScripts are the kinds' scripts. Each is given its items' arguments one after another
// (batchWidth of them per item) and writes one record per item, each ended by a NUL byte, in
// the order of the items.
var batchScripts = [numBatchKinds]string{
	batchStat:      statScript,
	batchRealPath:  realPathScript,
	batchMkdir:     mkdirScript,
	batchRemoveDir: removeDirScript,
}

// batchWidth is how many arguments one item passes.
var batchWidth = [numBatchKinds]int{batchStat: 1, batchRealPath: 1, batchMkdir: 3, batchRemoveDir: 1}

// maxBatch bounds the items one command carries, keeping its argument list short.
const maxBatch = 256

// batch gathers the calls of one kind waiting for one connection and sudo setting.
type batch struct {
	mu      sync.Mutex
	queue   []*batchCall
	running bool
	// commands counts the commands run, for tests.
	commands int
}

type batchCall struct {
	args   []string
	done   chan struct{}
	record []byte
	err    error
}

// batches are a connection's batches: by kind, with and without sudo.
type batches [2][numBatchKinds]batch

func (h *Host) batch(kind batchKind) *batch {
	sudo := 0
	if h.sudo() {
		sudo = 1
	}
	return &h.conn.batches[sudo][kind]
}

// runBatched runs one item of kind with args (batchWidth[kind] of them) in a command it may share
// with other callers, and returns the item's record. The commands run in the pool's context, not
// a caller's: one caller giving up must not fail the others. A caller whose ctx ends stops
// waiting, and its item may still run (bounded by the target's command timeout): the kinds
// batched are ones whose effect the caller's next look at the node sees.
func (h *Host) runBatched(ctx context.Context, kind batchKind, args ...string) ([]byte, error) {
	call := &batchCall{args: args, done: make(chan struct{})}
	b := h.batch(kind)
	b.mu.Lock()
	b.queue = append(b.queue, call)
	if !b.running {
		b.running = true
		go b.run(h, kind)
	}
	b.mu.Unlock()
	select {
	case <-call.done:
		return call.record, call.err
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// run runs commands until the queue is empty.
func (b *batch) run(h *Host, kind batchKind) {
	for {
		b.mu.Lock()
		calls := b.queue[:min(len(b.queue), maxBatch)]
		b.queue = b.queue[len(calls):]
		if len(calls) == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		b.commands++
		b.mu.Unlock()
		args := make([]string, 0, len(calls)*batchWidth[kind])
		for _, c := range calls {
			args = append(args, c.args...)
		}
		out, err := h.RunShort(h.pool.ctx, Script(batchScripts[kind], args...))
		var records [][]byte
		if err == nil {
			// Each item's record ends in a NUL. What follows the last one belongs to no item: in a
			// session of its own (runAlone), the login shell's stderr comes after the script's
			// stdout (a node's ~/.bashrc that prints, as pyenv's rehash did in CI), so it is left out.
			records = bytes.Split(out, []byte{0})
			if len(records) != len(calls)+1 {
				err = fmt.Errorf("unexpected output for %d items: %q", len(calls), out)
			} else if trailing := records[len(calls)]; len(trailing) != 0 {
				h.pool.log(h.pool.ctx, "SSH batch command printed after its last item; ignored", map[string]any{"host": h.String(), "output": string(trailing)})
			}
		}
		for i, c := range calls {
			if err != nil {
				c.err = err
			} else {
				c.record = records[i]
			}
			close(c.done)
		}
	}
}

// statusRecord splits a record of the form "<exit status>\n<output>" (the mkdir and rmdir
// scripts' records) into the status and the output without its final newline.
func statusRecord(record []byte) (int, string, error) {
	status, out, ok := bytes.Cut(record, []byte("\n"))
	var n int
	if _, err := fmt.Sscanf(string(status), "%d", &n); !ok || err != nil {
		return 0, "", fmt.Errorf("unexpected record %q", record)
	}
	return n, string(bytes.TrimRight(out, "\n")), nil
}
