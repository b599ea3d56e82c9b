package workercheck

import (
	"syscall"
	"time"

	"github.com/lockfault/lockfault/history"
	"github.com/lockfault/lockfault/internal/procwatch"
	"github.com/lockfault/lockfault/worker"
)

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
	} else if !poll(CrashTimeout, func() bool { return procwatch.Gone(pid) }) {
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
	if !poll(StopTimeout, func() bool { return procwatch.ThreadsStopped(ready.Pid) }) {
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
