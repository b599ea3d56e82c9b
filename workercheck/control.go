package workercheck

import (
	"fmt"
	"time"

	"github.com/lockfault/lockfault/history"
	"github.com/lockfault/lockfault/worker"
)

// Bounds and durations of the control checks.
const (
	// holdProbe is a hold that a cut sent before it must not shorten, and
	// the sleep of a sleep failpoint: the reply comes no sooner (a lower
	// bound, never a timed upper one).
	holdProbe = 300 * time.Millisecond
	// longHold is a hold only a cut (or a kill) ends.
	longHold = 60 * time.Second
	// stopMs is the ms a stop failpoint asks the harness to keep the
	// worker stopped; the check continues it as soon as it is stopped.
	stopMs = 1000
	// pollEvery is how often a check looks at /proc or the resource.
	pollEvery = 2 * time.Millisecond
)

// poll waits until cond holds, at most within.
func poll(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pollEvery)
	}
	return true
}

// checkClock: a clock offset, forwards or back, is accepted and answered
// with a clock message carrying the offset, in order, and the lock goes on
// working. (Whether the wall time it reports moved is the run's to judge:
// a step without effect is allowed, and recorded as such.)
func checkClock(p *probe) {
	s := p.client("c1")
	seen := len(s.clocks)
	offsets := []int64{3_600_000, -3_600_000, 0}
	for _, v := range offsets {
		s.command(worker.Command{Cmd: "clock", OffsetMs: v}, p.check.ID, ruleClock)
	}
	s.until("clock", ReplyTimeout, p.check.ID, ruleClock, func() bool { return len(s.clocks) >= seen+len(offsets) })
	for i, v := range offsets {
		if m := s.clocks[seen+i]; m.msg.OffsetMs != v {
			s.fail(p.check.ID, ruleClock, fmt.Sprintf("clock message %d carries offset_ms %d, answering a clock command with offset_ms %d", i+1, m.msg.OffsetMs, v), &m)
		}
	}
	s.barrier("")
	lease := p.unique("lease")
	p.mustAcquire(s, p.unique("key"), lease, grantTTL, idAcquire)
	p.release(s, lease, idRelease)
}

// reads counts the resource's reads under lease.
func (p *probe) reads(lease string) int {
	n := 0
	for _, e := range p.srv.accessesOf(lease) {
		if e.Access == "read" {
			n++
		}
	}
	return n
}

// waitRead waits until the resource saw more than seen reads under lease
// (the hold of the section sent last has begun).
func (p *probe) waitRead(s *session, lease string, op int64, seen int) {
	read := func() bool { return p.reads(lease) > seen }
	if !poll(ReplyTimeout, read) {
		s.fail(idCS, ruleCS, fmt.Sprintf("the resource saw no read under lease %s %v after the section was sent", lease, ReplyTimeout), s.last, sentOf(s, op)...)
	}
}

// checkCut: a cut sent while no hold is under way does nothing (the next
// hold is not shortened); a cut during a hold ends it at once, and the
// section writes and replies as usual. A worker may ignore cut: it is
// then skipped.
func checkCut(p *probe) {
	s := p.client("c1")
	lease := p.unique("lease")
	p.mustAcquire(s, p.unique("key"), lease, grantTTL, idAcquire)
	s.command(worker.Command{Cmd: "cut"}, p.check.ID, ruleCut)
	t0 := history.Now()
	op := s.op(worker.Command{Cmd: "cs", Lease: lease, HoldMs: holdProbe.Milliseconds()}, p.check.ID, ruleCut)
	s.pipeline()
	l := s.end(op, p.check.ID, ruleCut, holdProbe+ReplyTimeout)
	if took := time.Duration(l.at - t0); took < holdProbe {
		p.failf(ruleCut, &l, sentOf(s, op), "a cut sent while no hold was under way shortened the next section's hold of %v to %v", holdProbe, took.Round(time.Millisecond))
	}
	seen := p.reads(lease)
	op = s.op(worker.Command{Cmd: "cs", Lease: lease, HoldMs: longHold.Milliseconds()}, p.check.ID, ruleCut)
	s.pipeline()
	p.waitRead(s, lease, op, seen)
	s.command(worker.Command{Cmd: "cut"}, p.check.ID, ruleCut)
	deadline := time.Now().Add(CutTimeout)
	for s.ops[op].end == nil {
		if _, ok := s.next(deadline); !ok {
			if s.eof {
				s.exitFailure(p.check.ID, "stdout ended during a cut section", sentOf(s, op)...)
			}
			p.skipf("the worker ignores cut (allowed): a section holding %v was not ended %v after cut", longHold, CutTimeout)
		}
	}
	if m := s.ops[op].end.msg; m.Status != worker.StatusOK || m.Wrote == nil {
		p.failf(ruleCut, s.ops[op].end, sentOf(s, op), "the cut section gave %s without wrote: a cut section writes and replies as usual", m.Status)
	}
	p.release(s, lease, idRelease)
}

// checkAtOnce: a control command sent while an operation blocks (a long
// hold) is answered at once, not after the operation.
func checkAtOnce(p *probe) {
	s := p.client("c1")
	probe := `{"cmd":"failpoint","name":"wcheck-no-such-failpoint","action":"crash"}`
	// The probe line is refused at all (with no operation running) ...
	n := s.bad(probe, "failpoint", 0)
	s.barrier("")
	if _, ok := s.lineErr[n]; !ok {
		x, _ := s.sentLine(n)
		s.fail(idFpUnknown, ruleFpUnknown, "a failpoint the worker cannot hit was not refused", s.last, x.line())
	}
	// ... and at once while a section holds.
	lease := p.unique("lease")
	p.mustAcquire(s, p.unique("key"), lease, grantTTL, idAcquire)
	op := s.op(worker.Command{Cmd: "cs", Lease: lease, HoldMs: longHold.Milliseconds()}, idCS, ruleCS)
	s.pipeline()
	p.waitRead(s, lease, op, 0)
	n = s.bad(probe, "failpoint", 0)
	x, _ := s.sentLine(n)
	s.until("answer to a failpoint line while a section holds", AtOnceTimeout, p.check.ID, ruleAtOnce, func() bool { _, ok := s.lineErr[n]; return ok }, x.line())
	if s.ops[op].end != nil {
		p.failf(ruleAtOnce, s.ops[op].end, []Line{x.line()}, "the section holding %v was answered before the failpoint line", longHold)
	}
	s.command(worker.Command{Cmd: "cut"}, idCut, ruleCut)
	deadline := time.Now().Add(CutTimeout)
	for s.ops[op].end == nil {
		if _, ok := s.next(deadline); !ok {
			// A worker that ignores cut: the hold is ended by killing it.
			s.pooled = ""
			p.notef("cut is ignored, so the worker was killed to end the section's hold")
			return
		}
	}
	p.release(s, lease, idRelease)
}

// checkEndpoints: after a describe-only init (with the resource),
// endpoints builds the lock, and a later endpoints re-points it: the
// acquires after each reach the servers named last. Neither is answered.
func checkEndpoints(p *probe) {
	s := p.take(keyDescribe)
	if s == nil {
		s = p.spawn("describe")
		p.handshake(s, p.initCommand("describe", nil, true), idDescribe, ruleStartup)
	}
	s.pooled = "" // re-pointed: no later check may take it
	for i := range 2 {
		before := [2][]map[string]bool{p.srv.keys(p.ctx, 0), p.srv.keys(p.ctx, 1)}
		s.command(worker.Command{Cmd: "endpoints", Endpoints: p.srv.endpoints(p.ctx, i)}, p.check.ID, ruleEndpoints)
		s.barrier("")
		lease := p.unique("lease")
		op := p.mustAcquire(s, p.unique("key"), lease, grantTTL, p.check.ID)
		now := majority(p.srv.newKeys(p.ctx, i, before[i]), func(m map[string]int64) bool { return len(m) > 0 })
		other := 1 - i
		old := majority(p.srv.newKeys(p.ctx, other, before[other]), func(m map[string]int64) bool { return len(m) > 0 })
		if !now || old {
			p.failf(ruleEndpoints, s.ops[op].end, sentOf(s, op), "after endpoints named server set %d %v, the acquire left a key there: %v, and on set %d %v: %v", i+1, p.srv.set(p.ctx, i), now, other+1, p.srv.set(p.ctx, other), old)
		}
	}
}
