package workercheck

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/lockfault/lockfault/worker"
)

// expect says what a line sent to the worker should get.
type expect int

const (
	// expectAccept: a valid command; an error for it breaks the owner's
	// rule.
	expectAccept expect = iota
	// expectRefuse: a line that breaks a rule; the check looks for the
	// error that refuses it.
	expectRefuse
	// expectAny: whatever the answer (a barrier).
	expectAny
)

// sent is one line sent to the worker.
type sent struct {
	n      int
	text   string // shown
	cmd    string
	expect expect
	owner  string // for expectAccept: the check whose rule a refusal breaks
	rule   string
	op     int64  // the op id the line carries, if new and valid
	lease  string // the lease an acquire or round names
	reuse  int64  // an op id used before that the line carries
	// opOptional: the refusal need not end op (see bad.opOptional).
	opOptional bool
}

func (s sent) line() Line { return Line{Stream: "stdin", N: s.n, Text: s.text} }

// opState is an op id the harness sent.
type opState struct {
	line   int
	seq    int // its place in the order of operations
	queued bool
	end    *rline // the reply or error that ended it
	invoke bool   // a round step: an invoke must announce it
	inv    *rline
	lease  string // acquire, round: the lease it grants
}

// session is one worker process and the harness's end of the protocol:
// what was sent, and the judge of every line the worker writes, by the
// rules all conversations share. A line that breaks one ends the check with
// a failure owned by the check of that rule.
type session struct {
	*proc
	ctx  context.Context // the Run's: its end ends every wait
	name string          // the client name in init

	sent    []sent
	ops     map[int64]*opState
	nextOp  int64
	opSeq   int
	lineErr map[int]rline // errors, by the stdin line they refuse

	inits   []int          // init lines not yet answered
	answers map[int]rline  // the answer to each init line
	started bool           // an init was answered with ready
	ready   worker.Message // the ready of the handshake

	granted map[string]bool   // leases an acquire or round granted
	armed   map[string]string // failpoint name -> action
	fired   []rline
	stopped []rline
	renews  []rline
	clocks  []rline // clock messages (answers to clock commands)

	last   *rline // the last line read
	eof    bool
	pooled string // the key it is kept under for later checks ("": none)
}

func newSession(ctx context.Context, p *proc, name string) *session {
	return &session{ctx: ctx, proc: p, name: name, ops: map[int64]*opState{}, lineErr: map[int]rline{}, answers: map[int]rline{},
		granted: map[string]bool{}, armed: map[string]string{}}
}

// newOp returns an op id never used in this session.
func (s *session) newOp() int64 {
	s.nextOp++
	return s.nextOp
}

// send writes one line and records what it should get.
func (s *session) send(b []byte, x sent) int {
	x.n = len(s.sent) + 1
	x.text = shown(b)
	if err := s.write(b); err != nil {
		s.exitFailure(x.owner, fmt.Sprintf("could not send stdin line %d (%v)", x.n, err), x.line())
	}
	s.sent = append(s.sent, x)
	if x.cmd == "init" {
		s.inits = append(s.inits, x.n)
	}
	if x.op != 0 {
		s.opSeq++
		s.ops[x.op] = &opState{line: x.n, seq: s.opSeq, queued: x.expect == expectAccept, lease: x.lease}
	}
	return x.n
}

// command sends a well-formed command that must be accepted (a refusal
// breaks owner's rule) and returns its line number.
func (s *session) command(c worker.Command, owner, rule string) int {
	b, err := json.Marshal(c)
	if err != nil {
		panic(err)
	}
	x := sent{cmd: c.Cmd, expect: expectAccept, owner: owner, rule: rule, op: c.Op}
	if c.Cmd == "acquire" || c.Cmd == "round" {
		x.lease = c.Lease
	}
	return s.send(b, x)
}

// op sends an operation with a new op id (set here unless c.Op is) and
// returns the id. A round also registers its two step ids.
func (s *session) op(c worker.Command, owner, rule string) int64 {
	if c.Op == 0 {
		c.Op = s.newOp()
	}
	if c.Cmd == "round" {
		c.OpCS, c.OpRelease = s.newOp(), s.newOp()
	}
	s.command(c, owner, rule)
	if c.Cmd == "round" {
		for _, id := range []int64{c.OpCS, c.OpRelease} {
			s.opSeq++
			s.ops[id] = &opState{line: len(s.sent), seq: s.opSeq, queued: true, invoke: true}
		}
	}
	return c.Op
}

// bad sends a line that breaks a rule: the worker must refuse it. op is
// the new op id it carries (0: none). It returns the line number.
func (s *session) bad(text string, cmd string, op int64) int {
	return s.send([]byte(text), sent{cmd: cmd, expect: expectRefuse, op: op})
}

// fail ends the check with a failure owned by owner ("" for the running
// check).
func (s *session) fail(owner, rule, msg string, got *rline, lines ...Line) {
	f := &failure{owner: owner, rule: rule, msg: msg, sent: lines, stderr: s.stderr()}
	if got != nil {
		f.got = got.line()
	}
	panic(f)
}

// exitFailure fails because the worker is gone or not reading.
func (s *session) exitFailure(owner, msg string, lines ...Line) {
	s.waitExit(time.Second)
	s.fail(owner, "", fmt.Sprintf("%s; the worker %s", msg, s.status()), s.last, lines...)
}

// sentLine returns what was sent on line n.
func (s *session) sentLine(n int) (sent, bool) {
	if n < 1 || n > len(s.sent) {
		return sent{}, false
	}
	return s.sent[n-1], true
}

// next reads and judges one line, waiting until deadline. ok is false at
// the deadline; eof is true once stdout has ended.
func (s *session) next(deadline time.Time) (l rline, ok bool) {
	if s.eof {
		return rline{}, false
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case l, open := <-s.lines:
		if !open {
			s.eof = true
			return rline{}, false
		}
		s.last = &l
		s.judge(l)
		return l, true
	case <-t.C:
		return rline{}, false
	case <-s.ctx.Done():
		panic(runError{s.ctx.Err()})
	}
}

// until reads lines until cond holds, at most within; past it, or at the
// end of stdout, the check fails as owner's with what it waited for.
func (s *session) until(what string, within time.Duration, owner, rule string, cond func() bool, lines ...Line) {
	deadline := time.Now().Add(within)
	for !cond() {
		if _, ok := s.next(deadline); ok {
			continue
		}
		if s.eof {
			s.exitFailure(owner, "stdout ended before "+what, lines...)
		}
		s.fail(owner, rule, fmt.Sprintf("no %s within %v", what, within), s.last, lines...)
	}
}

// drain reads what the worker wrote until its stdout ends, at most within;
// every line is judged.
func (s *session) drain(within time.Duration) {
	deadline := time.Now().Add(within)
	for !s.eof {
		if _, ok := s.next(deadline); !ok && !s.eof {
			return
		}
	}
}

// end returns the line that ended op (its reply, or the error that
// refused it), reading until it comes.
func (s *session) end(op int64, owner, rule string, within time.Duration) rline {
	o := s.ops[op]
	var lines []Line
	if x, ok := s.sentLine(o.line); ok {
		lines = append(lines, x.line())
	}
	s.until(fmt.Sprintf("reply to op %d", op), within, owner, rule, func() bool { return o.end != nil }, lines...)
	return *o.end
}

// reply waits for the reply to an accepted operation.
func (s *session) reply(op int64, owner, rule string) worker.Message {
	return s.end(op, owner, rule, ReplyTimeout).msg
}

// pipeline sends a barrier op without waiting for it: queued behind the
// operations sent before it, its answer shows at once if one of theirs
// is missing (its reply would come first).
func (s *session) pipeline() int64 {
	op := s.newOp()
	text := fmt.Sprintf(`{"cmd":"release","op":%d,"lease":"wcheck-barrier-%d"}`, op, op)
	s.send([]byte(text), sent{cmd: "release", expect: expectAny, op: op})
	s.ops[op].queued = true
	return op
}

// barrier sends an operation every worker answers at once (the release
// of a lease it was never granted) and reads until its answer: every line
// sent before it has been read and answered by then, since operations are
// answered in order and refused lines at once.
func (s *session) barrier(owner string) rline {
	return s.end(s.pipeline(), owner, ruleOneReply, ReplyTimeout)
}

// refusal returns the error that refused line n, after a barrier: a
// missing error, another code, another line number or an op id that
// does not end the line's new op id fail the check.
func (s *session) refusal(n int, code, rule string) rline {
	return s.refusalOwned(n, code, rule, "")
}

// refusalOwned is refusal for a line whose refusal is the subject of the
// check owner.
func (s *session) refusalOwned(n int, code, rule, owner string) rline {
	x, _ := s.sentLine(n)
	e, ok := s.lineErr[n]
	if !ok {
		if x.op != 0 && s.ops[x.op].end != nil {
			got := *s.ops[x.op].end
			s.fail(owner, rule, fmt.Sprintf("line %d was not refused: op %d got a %s", n, x.op, got.msg.Type), &got, x.line())
		}
		s.fail(owner, rule, fmt.Sprintf("line %d was not refused: no error names it before the reply to a later op", n), s.last, x.line())
	}
	if e.msg.Code != code {
		s.fail(owner, ruleErrorLine, fmt.Sprintf("line %d was refused with code %q, want %q", n, e.msg.Code, code), &e, x.line())
	}
	if x.op != 0 && e.msg.Op != x.op && !x.opOptional {
		s.fail("", ruleOpIDs, fmt.Sprintf("the error refusing line %d does not end its new op id %d (it carries op %d)", n, x.op, e.msg.Op), &e, x.line())
	}
	return e
}

// arm arms a failpoint (a valid command: a refusal breaks owner's rule).
func (s *session) arm(name, action string, count int, ms int64, owner, rule string) int {
	n := s.command(worker.Command{Cmd: "failpoint", Name: name, Action: action, Count: count, Ms: ms}, owner, rule)
	if action == "off" {
		delete(s.armed, name)
	} else {
		s.armed[name] = action
	}
	return n
}
