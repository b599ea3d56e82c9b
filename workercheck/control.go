package workercheck

import (
	"fmt"
	"syscall"
	"time"

	"github.com/lockfault/lockfault/history"
	"github.com/lockfault/lockfault/worker"
)

// Bounds and durations of the control checks.
const (
	// CrashTimeout bounds the wait for a worker to die after fired crash.
	CrashTimeout = 5 * time.Second
	// StopTimeout bounds the wait for every thread of a worker to be
	// stopped after stopping.
	StopTimeout = 5 * time.Second
	// AtOnceTimeout bounds the answer to a control command sent while an
	// operation blocks.
	AtOnceTimeout = 5 * time.Second
	// CutTimeout bounds the reply of a section whose hold was cut.
	CutTimeout = 5 * time.Second
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

// checkFailpointUnknown: a failpoint the worker cannot hit is refused
// with not-supported, naming it and the action.
func checkFailpointUnknown(p *probe) {
	s := p.client("c1")
	lines := []string{
		`{"cmd":"failpoint","name":"wcheck-no-such-failpoint","action":"crash"}`,
		`{"cmd":"failpoint","name":"wcheck-no-such-failpoint","action":"sleep","ms":5}`,
	}
	var ns []int
	for _, l := range lines {
		ns = append(ns, s.bad(l, "failpoint", 0))
	}
	s.barrier("")
	for i, n := range ns {
		e := s.refusal(n, worker.CodeNotSupported, ruleFpUnknown)
		want := []string{"crash", "sleep"}[i]
		if e.msg.Name != "wcheck-no-such-failpoint" || e.msg.Action != want {
			x, _ := s.sentLine(n)
			p.failf(ruleFpUnknown, &e, []Line{x.line()}, "the refusal names failpoint %q action %q, want %q and %q", e.msg.Name, e.msg.Action, "wcheck-no-such-failpoint", want)
		}
	}
}

// waitFired reads until a fired message after the first seen, or until
// op, which should hit the failpoint, is answered without one.
func (p *probe) waitFired(s *session, seen int, op int64) rline {
	s.until("fired", ReplyTimeout, p.check.ID, ruleFailpoint, func() bool { return len(s.fired) > seen || s.ops[op].end != nil }, sentOf(s, op)...)
	if len(s.fired) == seen {
		p.failf(ruleFailpoint, s.ops[op].end, sentOf(s, op), "op %d was answered and the failpoint armed for it did not fire", op)
	}
	return s.fired[seen]
}

// checkFailpointCrash: at an armed crash failpoint the worker sends fired,
// then dies by SIGKILL, without answering the operation.
func checkFailpointCrash(p *probe) {
	p.needFailpoint("before-acquire")
	// The last check of client c2: the crash ends it.
	s := p.client("c2")
	s.pooled = ""
	ready := s.ready
	s.arm("before-acquire", "crash", 0, 0, p.check.ID, ruleFailpoint)
	op := s.op(worker.Command{Cmd: "acquire", Key: p.unique("key"), Lease: p.unique("lease"), TTLMs: grantTTL}, p.check.ID, ruleFailpoint)
	f := p.waitFired(s, len(s.fired), op)
	if f.msg.Name != "before-acquire" || f.msg.Action != "crash" {
		p.failf(ruleFired, &f, sentOf(s, op), "fired %s %s, want before-acquire crash", f.msg.Name, f.msg.Action)
	}
	if e := s.ops[op].end; e != nil {
		p.failf(ruleFired, e, sentOf(s, op), "the acquire was answered before its before-acquire failpoint fired")
	}
	pid := ready.Pid
	if pid == s.pid {
		if !s.waitExit(CrashTimeout) {
			p.failf(ruleFailpoint, &f, sentOf(s, op), "the worker still runs %v after fired crash", CrashTimeout)
		}
		ws, _ := s.cmd.ProcessState.Sys().(syscall.WaitStatus)
		if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			p.failf(ruleFailpoint, &f, sentOf(s, op), "after fired crash the worker %s, want killed by SIGKILL", s.status())
		}
	} else if !poll(CrashTimeout, func() bool { return procGone(pid) }) {
		p.failf(ruleFailpoint, &f, sentOf(s, op), "process %d (ready's pid) still runs %v after fired crash", pid, CrashTimeout)
	}
	s.drain(time.Second)
	if e := s.ops[op].end; e != nil {
		p.failf(ruleFailpoint, e, sentOf(s, op), "the acquire was answered after fired crash")
	}
}

// checkFailpointStop: at an armed stop failpoint the worker sends fired
// and stopping, and every thread of it is then stopped (in /proc), before
// the section writes; continued, it finishes the section.
func checkFailpointStop(p *probe) {
	p.needFailpoint("cs-after-read")
	s := p.client("c1")
	ready := s.ready
	lease := p.unique("lease")
	p.mustAcquire(s, p.unique("key"), lease, grantTTL, idAcquire)
	s.arm("cs-after-read", "stop", 0, stopMs, p.check.ID, ruleFailpoint)
	op := s.op(worker.Command{Cmd: "cs", Lease: lease}, p.check.ID, ruleFailpoint)
	s.pipeline()
	f := p.waitFired(s, len(s.fired), op)
	if f.msg.Name != "cs-after-read" || f.msg.Action != "stop" {
		p.failf(ruleFired, &f, sentOf(s, op), "fired %s %s, want cs-after-read stop", f.msg.Name, f.msg.Action)
	}
	s.until("stopping", ReplyTimeout, p.check.ID, ruleFired, func() bool { return len(s.stopped) > 0 }, sentOf(s, op)...)
	st := s.stopped[0]
	if st.msg.Name != "cs-after-read" || st.msg.Ms != stopMs {
		p.failf(ruleFired, &st, sentOf(s, op), "stopping names %s ms %d, want cs-after-read ms %d", st.msg.Name, st.msg.Ms, stopMs)
	}
	if !poll(StopTimeout, func() bool { return threadsStopped(ready.Pid) }) {
		p.failf(ruleFailpoint, &st, sentOf(s, op), "process %d (ready's pid) is not stopped %v after stopping (/proc/%d/task/*/stat)", ready.Pid, StopTimeout, ready.Pid)
	}
	for _, e := range p.srv.accessesOf(lease) {
		if e.Access == "write" {
			p.failf(ruleFailpoint, &st, sentOf(s, op), "the section wrote to the resource although the worker stopped at cs-after-read")
		}
	}
	if err := s.signal(syscall.SIGCONT); err != nil {
		p.failf(ruleFailpoint, &st, sentOf(s, op), "SIGCONT: %v", err)
	}
	if m := s.reply(op, p.check.ID, ruleFailpoint); m.Status != worker.StatusOK {
		p.failf(ruleCS, s.ops[op].end, sentOf(s, op), "the section continued after the stop gave %s, want ok", m.Status)
	}
}

// checkFailpointSleep: at an armed sleep failpoint the worker sends fired
// and sleeps ms before going on.
func checkFailpointSleep(p *probe) {
	p.needFailpoint("cs-before-write")
	s := p.client("c1")
	lease := p.unique("lease")
	p.mustAcquire(s, p.unique("key"), lease, grantTTL, idAcquire)
	s.arm("cs-before-write", "sleep", 0, holdProbe.Milliseconds(), p.check.ID, ruleFailpoint)
	seen := len(s.fired)
	t0 := history.Now()
	op := s.op(worker.Command{Cmd: "cs", Lease: lease}, p.check.ID, ruleFailpoint)
	s.pipeline()
	l := s.end(op, p.check.ID, ruleFailpoint, holdProbe+ReplyTimeout)
	if len(s.fired) == seen || s.fired[seen].n > l.n {
		p.failf(ruleFired, &l, sentOf(s, op), "the section was answered without fired cs-before-write sleep before it")
	}
	if f := s.fired[seen]; f.msg.Name != "cs-before-write" || f.msg.Action != "sleep" {
		p.failf(ruleFired, &f, sentOf(s, op), "fired %s %s, want cs-before-write sleep", f.msg.Name, f.msg.Action)
	}
	if took := time.Duration(l.at - t0); took < holdProbe {
		p.failf(ruleFailpoint, &l, sentOf(s, op), "the section was answered %v after it was sent, sooner than the failpoint's sleep of %v", took.Round(time.Millisecond), holdProbe)
	}
	p.release(s, lease, idRelease)
}

// checkFailpointCount: a failpoint with count N fires on the N-th hit,
// not before.
func checkFailpointCount(p *probe) {
	p.needFailpoint("before-acquire")
	s := p.client("c1")
	s.arm("before-acquire", "sleep", 2, 0, p.check.ID, ruleFailpoint)
	seen := len(s.fired)
	l1, l2 := p.unique("lease"), p.unique("lease")
	op1 := p.mustAcquire(s, p.unique("key"), l1, grantTTL, idAcquire)
	if len(s.fired) != seen {
		f := s.fired[seen]
		p.failf(ruleFailpoint, &f, sentOf(s, op1), "a failpoint armed with count 2 fired on the first hit")
	}
	op2 := p.mustAcquire(s, p.unique("key"), l2, grantTTL, idAcquire)
	if len(s.fired) == seen {
		p.failf(ruleFailpoint, s.ops[op2].end, sentOf(s, op2), "a failpoint armed with count 2 did not fire on the second hit")
	}
	p.release(s, l1, idRelease)
	p.release(s, l2, idRelease)
}

// checkFailpointOff: a failpoint armed and then turned off does not fire
// (the session's judge refuses any fired that is not armed).
func checkFailpointOff(p *probe) {
	p.needFailpoint("before-acquire")
	s := p.client("c1")
	s.arm("before-acquire", "crash", 0, 0, p.check.ID, ruleFailpoint)
	s.arm("before-acquire", "off", 0, 0, p.check.ID, ruleFailpoint)
	lease := p.unique("lease")
	p.mustAcquire(s, p.unique("key"), lease, grantTTL, idAcquire)
	p.release(s, lease, idRelease)
}

// checkClock: a clock offset, forwards or back, is accepted (with no
// answer), and the lock goes on working.
func checkClock(p *probe) {
	s := p.client("c1")
	for _, v := range []int64{3_600_000, -3_600_000, 0} {
		s.command(worker.Command{Cmd: "clock", OffsetMs: v}, p.check.ID, ruleClock)
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
