package workercheck

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/lockfault/lockfault/worker"
)

// A broken worker is lockfault's built-in worker (worker.New) behind a
// wrapper that edits the lines it reads and the messages it writes, so
// that it breaks exactly one rule of the protocol (a "break", selected by
// WCHECK_BREAK; breaks_test.go lists them). Everything else is the real
// worker, its real lock and real Redis.

// view is a stdin line as the wrapper sees it.
type view struct {
	raw   []byte
	obj   map[string]json.RawMessage // nil: not a JSON object
	cmd   string
	c     worker.Command
	valid bool // worker.DecodeCommand accepts it
}

func parseView(b []byte) view {
	v := view{raw: b}
	if json.Unmarshal(b, &v.obj) != nil {
		v.obj = nil
	}
	if v.obj != nil {
		json.Unmarshal(v.obj["cmd"], &v.cmd)
	}
	c, err := worker.DecodeCommand(b)
	v.c, v.valid = c, err == nil && len(b) <= worker.MaxLine
	return v
}

// isOp reports whether a view is a valid operation.
func (v view) isOp() bool {
	switch v.c.Cmd {
	case "acquire", "cs", "release", "extend", "round":
		return v.valid
	}
	return false
}

// encode re-encodes a view's object after edits.
func (v view) encode() []byte {
	b, err := json.Marshal(v.obj)
	if err != nil {
		panic(err)
	}
	return b
}

// entry is an operation in the order the worker answers them; fake is the
// reply the wrapper gives itself for an operation it kept from the worker,
// written once every operation before it is answered.
type entry struct {
	op   int64
	fake []byte
	done bool
}

// broken is the wrapper's state.
type broken struct {
	brk *brk

	mu        sync.Mutex
	cond      *sync.Cond
	realLine  int
	lineMap   []int // the worker's stdin line n-1 -> the real line
	client    string
	readyRaw  []byte
	readySeen bool
	declared  []string
	initLines map[int]bool
	initEP    map[int]bool // init lines that carried endpoints
	failed    bool         // an init was refused
	built     bool
	opCmd     map[int64]string
	opLease   map[int64]string
	opLine    map[int64]int
	seenOps   map[int64]bool
	remap     map[int64]int64 // the worker's op id -> the real one
	inflight  map[int64]bool
	held      map[string]bool
	silent    map[int]bool // real lines whose error is dropped
	order     []*entry
	stopMs    map[string]int64
	latched   bool
	nextFake  int64

	pipeMu sync.Mutex
	pipe   io.Writer
}

func newBroken(b *brk) *broken {
	w := &broken{brk: b, initLines: map[int]bool{}, initEP: map[int]bool{}, opCmd: map[int64]string{}, opLease: map[int64]string{},
		opLine: map[int64]int{}, seenOps: map[int64]bool{}, remap: map[int64]int64{}, inflight: map[int64]bool{}, held: map[string]bool{},
		silent: map[int]bool{}, stopMs: map[string]int64{}, nextFake: 1 << 50}
	w.cond = sync.NewCond(&w.mu)
	return w
}

// runBroken runs the built-in worker behind the named break; it returns
// the exit status.
func runBroken(name string) int {
	bk, ok := breaks[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "broken worker: unknown break %q\n", name)
		return 2
	}
	b := newBroken(bk)
	pr, pw := io.Pipe()
	b.pipe = pw
	w := worker.New(outWriter{b})
	done := make(chan error, 1)
	go func() { done <- w.Serve(pr) }()
	if bk.start != nil {
		bk.start(b)
	}
	go b.readStdin(pw)
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, "broken worker:", err)
		return 1
	}
	return 0
}

// readStdin passes the real stdin, edited by the break, to the worker.
func (b *broken) readStdin(pw *io.PipeWriter) {
	defer pw.Close()
	r := bufio.NewReader(os.Stdin)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			b.line(bytes.TrimSuffix(line, []byte("\n")))
		}
		if err != nil {
			return
		}
	}
}

// line handles one real stdin line.
func (b *broken) line(raw []byte) {
	v := parseView(raw)
	b.mu.Lock()
	b.realLine++
	n := b.realLine
	if v.valid && v.c.Cmd == "init" {
		b.initLines[n] = true
		b.initEP[n] = len(v.c.Endpoints.Primary)+len(v.c.Endpoints.Masters) > 0
		if b.client == "" {
			b.client = v.c.Client
		}
	}
	b.mu.Unlock()
	out := [][]byte{raw}
	if b.brk.in != nil {
		out = b.brk.in(b, n, v)
	}
	b.mu.Lock()
	if v.isOp() && len(out) > 0 {
		ops := []int64{v.c.Op}
		if v.c.Cmd == "round" {
			ops = append(ops, v.c.OpCS, v.c.OpRelease)
		}
		for _, op := range ops {
			if !b.seenOps[op] {
				b.opCmd[op], b.opLease[op], b.opLine[op] = v.c.Cmd, v.c.Lease, n
				b.inflight[op] = true
				b.order = append(b.order, &entry{op: op})
			}
		}
	}
	if v.isOp() {
		b.seenOps[v.c.Op] = true
	}
	if v.valid && v.c.Cmd == "endpoints" && b.readySeen {
		b.built = true
	}
	b.mu.Unlock()
	b.toWorker(n, out...)
}

// toWorker writes lines to the worker, each standing for real line n.
func (b *broken) toWorker(n int, lines ...[]byte) {
	b.pipeMu.Lock()
	defer b.pipeMu.Unlock()
	for _, l := range lines {
		b.mu.Lock()
		b.lineMap = append(b.lineMap, n)
		b.mu.Unlock()
		b.pipe.Write(append(l[:len(l):len(l)], '\n'))
	}
}

// fake queues a reply the wrapper gives itself, in the order of
// operations. Call with b.mu held.
func (b *broken) fake(m worker.Message) {
	b.order = append(b.order, &entry{op: m.Op, fake: enc(m)})
	b.flush()
}

// flush writes the fakes whose turn has come. Call with b.mu held.
func (b *broken) flush() {
	for len(b.order) > 0 {
		e := b.order[0]
		switch {
		case e.done:
		case e.fake != nil:
			os.Stdout.Write(append(e.fake, '\n'))
		default:
			return
		}
		b.order = b.order[1:]
	}
}

// write writes a message of the wrapper's own. Call with b.mu held.
func (b *broken) write(raw []byte) { os.Stdout.Write(append(raw[:len(raw):len(raw)], '\n')) }

func enc(m worker.Message) []byte {
	raw, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return raw
}

// outWriter receives the worker's messages (one json.Encoder line per
// Write), tracks them, lets the break edit them, and writes them out.
type outWriter struct{ b *broken }

func (o outWriter) Write(p []byte) (int, error) {
	b := o.b
	var m worker.Message
	if err := json.Unmarshal(p, &m); err != nil {
		os.Stdout.Write(p)
		return len(p), nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if m.Line > 0 && m.Line <= len(b.lineMap) {
		m.Line = b.lineMap[m.Line-1]
	}
	if real, ok := b.remap[m.Op]; ok {
		m.Op = real
	}
	switch m.Type {
	case "ready":
		if !b.readySeen {
			b.readySeen, b.declared = true, m.Failpoints
			b.readyRaw = enc(m)
		}
		b.built = b.built || b.lastInitEP()
	case "error":
		if b.initLines[m.Line] && !b.readySeen {
			b.failed = true
		}
	case "reply":
		if m.Status == worker.StatusOK {
			switch b.opCmd[m.Op] {
			case "acquire":
				b.held[b.opLease[m.Op]] = true
			case "release":
				delete(b.held, b.opLease[m.Op])
			}
		}
	}
	ended := m.Type == "reply" || m.Type == "error" && m.Op != 0
	op, line, isErr := m.Op, m.Line, m.Type == "error"
	var out [][]byte
	if m.Type == "error" && b.silent[m.Line] {
		out = nil
	} else if b.brk.out != nil {
		out = b.brk.out(b, &m)
	} else {
		out = [][]byte{enc(m)}
	}
	for _, raw := range out {
		b.write(raw)
	}
	if ended || isErr {
		for _, e := range b.order {
			if e.fake == nil && (ended && e.op == op || isErr && b.opLine[e.op] == line) {
				e.done = true
			}
		}
		delete(b.inflight, op)
		b.cond.Broadcast()
		b.flush()
	}
	return len(p), nil
}

// lastInitEP reports whether the latest init carried endpoints. Call with
// b.mu held.
func (b *broken) lastInitEP() bool {
	last := 0
	for n := range b.initLines {
		last = max(last, n)
	}
	return b.initEP[last]
}

// waitIdle blocks until no operation the worker has is unanswered.
func (b *broken) waitIdle() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for len(b.inflight) > 0 {
		b.cond.Wait()
	}
}

// keepCutting sends cut to the worker every few ms until op is answered
// (a cut the worker latched from before the section).
func (b *broken) keepCutting(n int, op int64) {
	go func() {
		for {
			time.Sleep(20 * time.Millisecond)
			b.mu.Lock()
			done := b.seenOps[op] && !b.inflight[op]
			b.mu.Unlock()
			if done {
				return
			}
			b.toWorker(n, []byte(`{"cmd":"cut"}`))
		}
	}()
}

// declares reports whether the relayed ready declared a failpoint. Call
// with b.mu held.
func (b *broken) declares(name string) bool { return slices.Contains(b.declared, name) }
