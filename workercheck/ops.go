package workercheck

import (
	"fmt"
	"time"

	"github.com/lockfault/lockfault/history"
	"github.com/lockfault/lockfault/lockimpl"
	"github.com/lockfault/lockfault/worker"
)

// Durations the operational checks use.
const (
	// waitProbe is the wait_ms of an acquire of a held lock: its fail
	// must not come sooner (a lower bound, never a timed upper one).
	waitProbe = 300 * time.Millisecond
	// wakeWait is the wait_ms of an acquire that the holder's release
	// must end with a grant.
	wakeWait = 5 * time.Second
	// grantTTL is the ttl_ms of the grants the checks take.
	grantTTL = 30000
)

// acquire takes the lock and returns the reply and the line it came on.
func (p *probe) acquire(s *session, key, lease string, ttl, wait int64, owner string) (worker.Message, rline) {
	op := s.op(worker.Command{Cmd: "acquire", Key: key, Lease: lease, TTLMs: ttl, WaitMs: wait}, owner, ruleAcquire)
	s.pipeline()
	l := s.end(op, owner, ruleAcquire, time.Duration(wait)*time.Millisecond+ReplyTimeout)
	return l.msg, l
}

// mustAcquire takes a free lock: anything but ok fails owner's check.
func (p *probe) mustAcquire(s *session, key, lease string, ttl int64, owner string) int64 {
	return p.mustAcquireWait(s, key, lease, ttl, 0, owner)
}

func (p *probe) mustAcquireWait(s *session, key, lease string, ttl, wait int64, owner string) int64 {
	m, l := p.acquire(s, key, lease, ttl, wait, owner)
	if m.Status != worker.StatusOK {
		x, _ := s.sentLine(s.ops[m.Op].line)
		s.fail(owner, ruleAcquire, fmt.Sprintf("acquire of the free key %q gave %s: %s", key, m.Status, m.Error), &l, x.line())
	}
	return m.Op
}

// release releases a lease and returns the reply.
func (p *probe) release(s *session, lease, owner string) worker.Message {
	op := s.op(worker.Command{Cmd: "release", Lease: lease}, owner, ruleRelease)
	s.pipeline()
	return s.reply(op, owner, ruleRelease)
}

// cs runs a critical section and returns the reply; a cs that is not ok
// fails owner's check.
func (p *probe) cs(s *session, lease string, hold int64, owner string) worker.Message {
	op := s.op(worker.Command{Cmd: "cs", Lease: lease, HoldMs: hold}, owner, ruleCS)
	s.pipeline()
	l := s.end(op, owner, ruleCS, time.Duration(hold)*time.Millisecond+ReplyTimeout)
	if l.msg.Status != worker.StatusOK || l.msg.Read == nil || l.msg.Wrote == nil {
		x, _ := s.sentLine(s.ops[op].line)
		s.fail(owner, ruleCS, fmt.Sprintf("a critical section under a held lease gave %s (read and wrote must be given with ok): %s", l.msg.Status, l.msg.Error), &l, x.line())
	}
	return l.msg
}

// sentOf returns the stdin line of an op.
func sentOf(s *session, op int64) []Line {
	x, _ := s.sentLine(s.ops[op].line)
	return []Line{x.line()}
}

// checkOneReply: operations sent back to back are answered one at a
// time, in order, each exactly once with its own op id (the session's
// judge holds every line to that), and a refused one by its error.
func checkOneReply(p *probe) {
	s := p.client("c1")
	k, lease := p.unique("key"), p.unique("lease")
	ops := []int64{
		s.op(worker.Command{Cmd: "acquire", Key: k, Lease: lease, TTLMs: grantTTL}, p.check.ID, ruleOneReply),
		s.op(worker.Command{Cmd: "cs", Lease: lease}, p.check.ID, ruleOneReply),
	}
	refused := badOp(s, "acquire", `{"cmd":"acquire","op":%d,"ttl_ms":30000}`)
	n := s.bad(refused.text, refused.cmd, refused.op)
	ops = append(ops,
		s.op(worker.Command{Cmd: "release", Lease: lease}, p.check.ID, ruleOneReply),
		s.op(worker.Command{Cmd: "release", Lease: lease}, p.check.ID, ruleOneReply),
		s.op(worker.Command{Cmd: "cs", Lease: "wcheck-none"}, p.check.ID, ruleOneReply),
	)
	s.barrier("")
	for _, op := range ops {
		if s.ops[op].end == nil {
			p.failf(ruleOneReply, s.last, sentOf(s, op), "op %d has no reply", op)
		}
	}
	s.refusalOwned(n, worker.CodeMalformed, ruleRequired, "rules/required")
	if m := s.ops[ops[0]].end.msg; m.Status != worker.StatusOK {
		p.failf(ruleAcquire, s.ops[ops[0]].end, sentOf(s, ops[0]), "acquire of a free key gave %s: %s", m.Status, m.Error)
	}
}

// checkMessages: a conversation through every operation and refusal;
// every line the worker writes must be a valid message (the session's
// judge decodes each with worker.DecodeMessage).
func checkMessages(p *probe) {
	s := p.client("c1")
	k, lease := p.unique("key"), p.unique("lease")
	p.mustAcquire(s, k, lease, grantTTL, idAcquire)
	p.cs(s, lease, 0, idCS)
	s.op(worker.Command{Cmd: "extend", Lease: lease, TTLMs: grantTTL}, idExtend, ruleExtend)
	p.release(s, lease, idRelease)
	p.release(s, lease, idRelease)
	s.bad(`{"cmd":"wcheck-bogus"}`, "wcheck-bogus", 0)
	s.bad(`{"cmd":"failpoint","name":"wcheck-none","action":"crash"}`, "failpoint", 0)
	s.bad(`{"cmd":"clock","bogus":1}`, "clock", 0)
	s.barrier("")
}

// majority reports whether at least a majority of the servers satisfy ok.
func majority(per []map[string]int64, ok func(map[string]int64) bool) bool {
	n := 0
	for _, m := range per {
		if ok(m) {
			n++
		}
	}
	return n > len(per)/2
}

// checkAcquire: an acquire of a free key is ok, under the lease the
// harness named, leaves the grant on the server (a new key on a majority
// of the masters), and excludes another client: its acquire is a fail.
func checkAcquire(p *probe) {
	c1, c2 := p.client("c1"), p.client("c2")
	k, l1, l2 := p.unique("key"), p.unique("lease"), p.unique("lease")
	before := p.srv.keys(p.ctx, 0)
	m, l := p.acquire(c1, k, l1, grantTTL, 0, p.check.ID)
	if m.Status != worker.StatusOK {
		p.failf(ruleAcquire, &l, sentOf(c1, m.Op), "acquire of a free key gave %s: %s", m.Status, m.Error)
	}
	if m.Lease != "" && m.Lease != l1 {
		p.failf(ruleAcquire, &l, sentOf(c1, m.Op), "the reply names lease %q, but the acquire named %q (the harness names leases)", m.Lease, l1)
	}
	if m.ValidityMs < 0 || m.ValidityMs > grantTTL && !p.has(lockimpl.CapWatchdog) {
		p.failf(ruleAcquire, &l, sentOf(c1, m.Op), "validity_ms %d is outside 0 .. ttl_ms %d", m.ValidityMs, grantTTL)
	}
	grant := p.srv.newKeys(p.ctx, 0, before)
	if !majority(grant, func(m map[string]int64) bool { return len(m) > 0 }) {
		p.failf(ruleAcquire, &l, sentOf(c1, m.Op), "the grant left no new key on the server(s) %v", p.srv.set(p.ctx, 0))
	}
	m2, l2l := p.acquire(c2, k, l2, grantTTL, 0, p.check.ID)
	if m2.Status != worker.StatusFail {
		p.failf(ruleAcquire, &l2l, sentOf(c2, m2.Op), "client c2's acquire of %q, which c1 holds, gave %s (want fail: the lock is taken, certainly)", k, m2.Status)
	}
	p.release(c1, l1, idRelease)
}

// checkAcquireWait: an acquire of a held lock keeps trying for wait_ms
// before its fail, and is granted when the holder releases meanwhile.
func checkAcquireWait(p *probe) {
	c1, c2 := p.client("c1"), p.client("c2")
	k, l1, l2, l3 := p.unique("key"), p.unique("lease"), p.unique("lease"), p.unique("lease")
	p.mustAcquire(c1, k, l1, grantTTL, idAcquire)
	t0 := history.Now()
	m, l := p.acquire(c2, k, l2, grantTTL, waitProbe.Milliseconds(), p.check.ID)
	if m.Status != worker.StatusFail {
		c2.fail(idAcquire, ruleAcquire, fmt.Sprintf("c2's acquire of a key c1 holds gave %s, want fail", m.Status), &l, sentOf(c2, m.Op)...)
	}
	if took := time.Duration(l.at - t0); took < waitProbe {
		p.failf(ruleAcquire, &l, sentOf(c2, m.Op), "c2 gave up after %v, before wait_ms %d ran out", took.Round(time.Millisecond), waitProbe.Milliseconds())
	}
	t0 = history.Now()
	op := c2.op(worker.Command{Cmd: "acquire", Key: k, Lease: l3, TTLMs: grantTTL, WaitMs: wakeWait.Milliseconds()}, p.check.ID, ruleAcquire)
	p.release(c1, l1, idRelease)
	l = c2.end(op, p.check.ID, ruleAcquire, wakeWait+ReplyTimeout)
	if l.msg.Status != worker.StatusOK && time.Duration(l.at-t0) >= wakeWait {
		// It waited all along: the release did not free the lock.
		c2.fail(idRelease, ruleRelease, fmt.Sprintf("c2's acquire with wait_ms %d gave %s after waiting it out, although c1 released the lock meanwhile", wakeWait.Milliseconds(), l.msg.Status), &l, sentOf(c2, op)...)
	}
	if l.msg.Status != worker.StatusOK {
		p.failf(ruleAcquire, &l, sentOf(c2, op), "c2's acquire with wait_ms %d gave %s although c1 released the lock meanwhile", wakeWait.Milliseconds(), l.msg.Status)
	}
	p.release(c2, l3, idRelease)
}

// checkCS: a critical section reads the grant key's register of the
// resource, writes back the value + 1 under the client's name and lease,
// and replies ok with read and wrote; a second one reads what the first
// wrote.
func checkCS(p *probe) {
	s := p.client("c1")
	k, lease := p.unique("key"), p.unique("lease")
	p.mustAcquire(s, k, lease, grantTTL, idAcquire)
	m1 := p.cs(s, lease, 0, p.check.ID)
	m2 := p.cs(s, lease, 0, p.check.ID)
	p.release(s, lease, idRelease)
	if *m1.Wrote != *m1.Read+1 || *m2.Read != *m1.Wrote || *m2.Wrote != *m2.Read+1 {
		p.failf(ruleCS, s.last, nil, "two sections read %d wrote %d, then read %d wrote %d: each must write what it read + 1, and read what the last wrote", *m1.Read, *m1.Wrote, *m2.Read, *m2.Wrote)
	}
	if v := p.srv.res.ValueOf(k); v != *m2.Wrote {
		p.failf(ruleCS, s.last, nil, "the resource's register for key %q holds %d, but the last section says it wrote %d (a request must name the grant's key)", k, v, *m2.Wrote)
	}
	acc := p.srv.accessesOf(lease)
	if len(acc) != 4 {
		p.failf(ruleCS, s.last, nil, "the resource saw %d accesses under lease %q, want 4 (a read and a write per section)", len(acc), lease)
	}
	for _, e := range acc {
		if e.Process != s.name || e.Key != k {
			p.failf(ruleCS, s.last, nil, "the resource saw %s by client %q for key %q, want client %q and key %q", e.Access, e.Process, e.Key, s.name, k)
		}
	}
}

// checkRelease: a release is ok and frees the lock for another client.
func checkRelease(p *probe) {
	c1, c2 := p.client("c1"), p.client("c2")
	k, l1, l2 := p.unique("key"), p.unique("lease"), p.unique("lease")
	p.mustAcquire(c1, k, l1, grantTTL, idAcquire)
	if m := p.release(c1, l1, p.check.ID); m.Status != worker.StatusOK {
		p.failf(ruleRelease, c1.last, sentOf(c1, m.Op), "release of a held lease gave %s: %s", m.Status, m.Error)
	}
	m, l := p.acquire(c2, k, l2, grantTTL, 0, p.check.ID)
	if m.Status != worker.StatusOK {
		p.failf(ruleRelease, &l, sentOf(c2, m.Op), "after c1's release, c2's acquire gave %s: the release left the lock held", m.Status)
	}
	p.release(c2, l2, idRelease)
}

// checkReleaseOld: releasing a lease already released is a fail, and does
// not free the lock another client now holds.
func checkReleaseOld(p *probe) {
	c1, c2 := p.client("c1"), p.client("c2")
	k, l1, l2, l3 := p.unique("key"), p.unique("lease"), p.unique("lease"), p.unique("lease")
	p.mustAcquire(c1, k, l1, grantTTL, idAcquire)
	if m := p.release(c1, l1, idRelease); m.Status != worker.StatusOK {
		p.failf(ruleRelease, c1.last, sentOf(c1, m.Op), "release of a held lease gave %s", m.Status)
	}
	p.mustAcquire(c2, k, l2, grantTTL, idRelease)
	if m, l := p.acquire(c1, k, p.unique("lease"), grantTTL, 0, idAcquire); m.Status == worker.StatusOK {
		c1.fail(idAcquire, ruleAcquire, fmt.Sprintf("c1 acquired %q, which c2 holds", k), &l, sentOf(c1, m.Op)...)
	}
	m := p.release(c1, l1, p.check.ID)
	if m.Status != worker.StatusFail {
		p.failf(ruleRelease, c1.last, sentOf(c1, m.Op), "release of lease %s, released before and now held by c2, gave %s (want fail: the grant is certainly gone)", l1, m.Status)
	}
	m, l := p.acquire(c1, k, l3, grantTTL, 0, p.check.ID)
	if m.Status == worker.StatusOK {
		p.failf(ruleRelease, &l, sentOf(c1, m.Op), "after c1 released its old lease again, c1 acquired %q, which c2 holds: the old release freed c2's lock", k)
	}
	p.release(c2, l2, idRelease)
}
