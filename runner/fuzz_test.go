package runner

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockfault/lockfault/history"
	"github.com/lockfault/lockfault/worker"
)

// FuzzWorkerReplies plays a worker: the fuzzer writes its stdout, which the
// harness reads as it reads a real worker's, with an acquire, a cs and a
// release waiting for replies and a round of three steps under way.
// Whatever the worker writes, the harness must not panic or hang, and it
// must believe nothing that breaks a rule: an op gets at most one message,
// a reply only to the op it names and matching it (checkReply), an invoke
// only for a round's step, a renew only of a lease an acquire granted; a
// line that is not a message, or breaks one of these, ends the run.
func FuzzWorkerReplies(f *testing.F) {
	for _, s := range []string{
		"{\"type\":\"reply\",\"op\":1,\"status\":\"ok\",\"lease\":\"c1-1\",\"validity_ms\":2000}\n{\"type\":\"renew\",\"lease\":\"c1-1\",\"validity_ms\":2000}\n",
		"{\"type\":\"reply\",\"op\":1,\"status\":\"ok\",\"lease\":\"c1-1-not-mine\"}\n",
		"{\"type\":\"reply\",\"op\":1,\"status\":\"ok\",\"validity_ms\":-5}\n",
		"{\"type\":\"renew\",\"lease\":\"never-granted\",\"validity_ms\":10}\n",
		"{\"type\":\"reply\",\"op\":2,\"status\":\"ok\"}\n{\"type\":\"reply\",\"op\":2,\"status\":\"ok\"}\n",
		"{\"type\":\"reply\",\"op\":99,\"status\":\"ok\"}\n",
		"{\"type\":\"reply\",\"op\":3,\"status\":\"ok\",\"token\":\"t\"}\n",
		"{\"type\":\"invoke\",\"op\":1}\n{\"type\":\"invoke\",\"op\":1}\n",
		"{\"type\":\"invoke\",\"op\":6}\n{\"type\":\"invoke\",\"op\":6}\n{\"type\":\"invoke\",\"op\":6}\n{\"type\":\"invoke\",\"op\":6}\n{\"type\":\"invoke\",\"op\":6}\n{\"type\":\"invoke\",\"op\":6}\n{\"type\":\"invoke\",\"op\":6}\n{\"type\":\"invoke\",\"op\":6}\n{\"type\":\"invoke\",\"op\":6}\n{\"type\":\"invoke\",\"op\":6}\n",
		"{\"type\":\"error\",\"op\":1,\"error\":\"x\"}\n{\"type\":\"reply\",\"op\":1,\"status\":\"ok\"}\n",
		"{\"type\":\"ready\",\"lock\":\"x\",\"needs\":\"single\"}\n",
		"{\"type\":\"stopping\",\"name\":\"after-setnx\",\"ms\":5}\n",
		"not json\n",
		"{\"type\":\"reply\",\"op\":1,\"status\":\"ok\",\"valid_until\":-1}\n",
		string(bytes.Repeat([]byte("x"), worker.MaxLine+10)) + "\n",
	} {
		f.Add(true, []byte(s))
	}
	f.Add(false, []byte("{\"type\":\"ready\",\"lock\":\"x\",\"needs\":\"single\"}\n{\"type\":\"ready\",\"lock\":\"x\",\"needs\":\"single\"}\n"))
	f.Add(false, []byte("{\"type\":\"reply\",\"op\":1,\"status\":\"ok\"}\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, started bool, out []byte) {
		h, err := history.Create(filepath.Join(dir, "history.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		r, p, calls, round := fuzzRun(h, started)
		done := make(chan struct{})
		go func() {
			defer close(done)
			p.read(bytes.NewReader(out))
		}()
		select {
		case <-done:
		case <-time.After(30 * time.Second): // a hang bound, not a speed check
			t.Fatal("the harness's reader hangs on this worker output")
		}
		// The run ends on a protocol violation (its cause), or before
		// ready on a failed handshake (an error, or the worker's error
		// message, which fails init).
		ended := context.Cause(r.ctx) != nil
		select {
		case x := <-p.hs:
			ended = ended || x.err != nil || x.m.Type == "error"
		default:
		}

		// Every line the harness took must be a message; one that is not
		// ends the run (or, before ready, fails the handshake).
		lr := worker.NewLineReader(bytes.NewReader(out))
		for {
			b, err := lr.Next()
			if err == io.EOF {
				break
			}
			bad := err != nil
			if !bad {
				_, derr := worker.DecodeMessage(b)
				bad = derr != nil
			}
			if bad && !ended {
				t.Fatalf("line %d is not a valid message, yet the run goes on: %q", lr.Line, b)
			}
			if err != nil && err != worker.ErrLineTooLong {
				break
			}
		}

		// What reached each waiting call is at most one reply, and that
		// reply matches its op.
		granted := map[string]bool{}
		for _, c := range calls {
			select {
			case m := <-c.ch:
				if m.Type != "reply" || m.Op != c.cmd.Op {
					t.Fatalf("%s op %d was handed a %s for op %d", c.cmd.Cmd, c.cmd.Op, m.Type, m.Op)
				}
				if err := checkReply(c.cmd, m); err != nil {
					t.Fatalf("%s op %d was handed a reply that breaks a rule: %v", c.cmd.Cmd, c.cmd.Op, err)
				}
				if c.cmd.Cmd == "acquire" && m.Status == worker.StatusOK {
					granted[c.cmd.Lease] = true
				}
			default:
			}
			if len(c.ch) > 0 {
				t.Fatalf("%s op %d was handed a second message", c.cmd.Cmd, c.cmd.Op)
			}
		}
		for len(round) > 0 {
			m := <-round
			if m.Op < 5 || m.Op > 7 || (m.Type != worker.TypeInvoke && m.Type != "reply") {
				t.Fatalf("the round was handed a %s for op %d", m.Type, m.Op)
			}
			if m.Type == "reply" && m.Op == 5 && m.Status == worker.StatusOK {
				granted["c1-5"] = true
			}
		}
		h.Close()
		evs, _ := history.Read(filepath.Join(dir, "history.jsonl"))
		for _, e := range evs {
			if e.Kind == history.Renew && !granted[e.Lease] {
				t.Fatalf("a renew of lease %q, which no acquire granted, was recorded", e.Lease)
			}
		}
		os.Remove(filepath.Join(dir, "history.jsonl"))
	})
}

// fuzzRun is the part of a run that reads one worker: three calls waiting
// for their replies (ops 1 to 3) and a round under way (ops 5 to 7).
func fuzzRun(h *history.Writer, started bool) (*run, *proc, []pendingOp, chan worker.Message) {
	ctx, cancel := context.WithCancelCause(context.Background())
	r := newRun(&recorder{log: io.Discard, hist: h, abort: cancel})
	r.ctx, r.opID = ctx, 7
	p := &proc{process: &process{name: "c1", dead: make(chan struct{}), readerDone: make(chan struct{})}, label: "worker c1 (fuzz)", r: r, pending: map[int64]pendingOp{}, granted: map[string]bool{},
		hs: make(chan handshake, 1)}
	close(p.dead) // signals to it fail: there is no process
	p.started.Store(started)
	var calls []pendingOp
	for i, c := range []string{"acquire", "cs", "release"} {
		op := pendingOp{cmd: worker.Command{Cmd: c, Op: int64(i + 1), Lease: "c1-1"}, ch: make(chan worker.Message, 1)}
		p.pending[op.cmd.Op] = op
		calls = append(calls, op)
	}
	round := make(chan worker.Message, 8)
	for i, c := range []string{"acquire", "cs", "release"} {
		p.pending[int64(5+i)] = pendingOp{cmd: worker.Command{Cmd: c, Op: int64(5 + i), Lease: "c1-5"}, ch: round, round: true}
	}
	return r, p, calls, round
}
