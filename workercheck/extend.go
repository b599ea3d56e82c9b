package workercheck

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/lockfault/lockfault/history"
	"github.com/lockfault/lockfault/lockimpl"
	"github.com/lockfault/lockfault/worker"
)

// extendTTL is the ttl_ms an extend asks for: far beyond grantTTL, so the
// key's time to live shows whether the servers were extended.
const extendTTL = 3_600_000

// extend sends an extend and returns its reply and line.
func (p *probe) extend(s *session, lease string, ttl int64, owner string) (worker.Message, rline) {
	op := s.op(worker.Command{Cmd: "extend", Lease: lease, TTLMs: ttl}, owner, ruleExtend)
	s.pipeline()
	l := s.end(op, owner, ruleExtend, ReplyTimeout)
	return l.msg, l
}

// checkExtend: a lock that claims extend moves a held grant's expiry (its
// valid_until, and the time to live of its keys on a majority of the
// servers); one that does not answers extend with fail and not-supported.
func checkExtend(p *probe) {
	s := p.client("c1")
	k, lease := p.unique("key"), p.unique("lease")
	before := p.srv.keys(p.ctx, 0)
	acq := s.ops[p.mustAcquire(s, k, lease, grantTTL, idAcquire)].end.msg
	grant := p.srv.newKeys(p.ctx, 0, before)
	m, l := p.extend(s, lease, extendTTL, p.check.ID)
	if !p.has(lockimpl.CapExtend) {
		if m.Status != worker.StatusFail || m.Code != worker.CodeNotSupported {
			p.failf(ruleExtend, &l, sentOf(s, m.Op), "the lock does not claim extend, so extend must be a reply with status fail and code not-supported, got status %s code %q", m.Status, m.Code)
		}
		p.release(s, lease, idRelease)
		p.notef("the lock does not claim extend: extend is answered not-supported")
		return
	}
	if m.Status != worker.StatusOK {
		p.failf(ruleExtend, &l, sentOf(s, m.Op), "extend of a held lease gave %s: %s", m.Status, m.Error)
	}
	if acq.ValidUntil != 0 && m.ValidUntil != 0 && m.ValidUntil <= acq.ValidUntil {
		p.failf(ruleExtend, &l, sentOf(s, m.Op), "extend to ttl_ms %d left valid_until at %d, not after the acquire's %d", extendTTL, m.ValidUntil, acq.ValidUntil)
	}
	after := p.srv.refresh(p.ctx, 0, grant)
	withTTL := func(m map[string]int64) bool {
		for _, ttl := range m {
			if ttl > 0 {
				return true
			}
		}
		return false
	}
	if !majority(grant, withTTL) {
		p.notef("the grant's keys carry no time to live, so the extend was judged on its reply only")
	} else {
		grown := func(i int) bool {
			for k, ttl := range grant[i] {
				if ttl > 0 && after[i][k] > grantTTL {
					return true
				}
			}
			return false
		}
		n := 0
		for i := range grant {
			if grown(i) {
				n++
			}
		}
		if n <= len(grant)/2 {
			p.failf(ruleExtend, &l, sentOf(s, m.Op), "extend was ok, but the grant's keys %v still expire within the acquire's ttl_ms %d on the servers (time to live after the extend: %v)", grant, grantTTL, after)
		}
	}
	p.release(s, lease, idRelease)
}

// checkExtendOld: an extend of a lease already released, whose key
// another client now holds, is a fail and leaves that client's grant as
// it was.
func checkExtendOld(p *probe) {
	if !p.has(lockimpl.CapExtend) {
		p.skipf("the lock does not claim extend")
	}
	c1, c2 := p.client("c1"), p.client("c2")
	k, l1, l2 := p.unique("key"), p.unique("lease"), p.unique("lease")
	p.mustAcquire(c1, k, l1, grantTTL, idAcquire)
	p.release(c1, l1, idRelease)
	before := p.srv.keys(p.ctx, 0)
	p.mustAcquire(c2, k, l2, grantTTL, idRelease)
	grant := p.srv.newKeys(p.ctx, 0, before)
	m, l := p.extend(c1, l1, extendTTL, p.check.ID)
	if m.Status != worker.StatusFail {
		p.failf(ruleExtendOld, &l, sentOf(c1, m.Op), "extend of lease %s, released before and now held by c2, gave %s (want fail)", l1, m.Status)
	}
	after := p.srv.refresh(p.ctx, 0, grant)
	for i := range grant {
		for key, ttl := range grant[i] {
			if ttl > 0 && after[i][key] > grantTTL {
				p.failf(ruleExtendOld, &l, sentOf(c1, m.Op), "c1's extend of its old lease moved the expiry of c2's key %q to %d ms", key, after[i][key])
			}
		}
	}
	p.release(c2, l2, idRelease)
}

// checkValidUntil: valid_until is on CLOCK_MONOTONIC: after the reply was
// read (in the future) and no later than the start of the call + ttl_ms
// (a watchdog lock may claim more); validity_ms is within ttl_ms. So for
// an extend, when the lock claims extend.
func checkValidUntil(p *probe) {
	s := p.client("c1")
	k, lease := p.unique("key"), p.unique("lease")
	l := *s.ops[p.mustAcquire(s, k, lease, grantTTL, idAcquire)].end
	if l.msg.ValidUntil == 0 {
		p.release(s, lease, idRelease)
		p.skipf("valid_until is 0: the lock claims no end")
	}
	p.inRange(s, l, grantTTL)
	if p.has(lockimpl.CapExtend) {
		m, el := p.extend(s, lease, 2*grantTTL, idExtend)
		if m.Status != worker.StatusOK {
			s.fail(idExtend, ruleExtend, fmt.Sprintf("extend of a held lease gave %s", m.Status), &el, sentOf(s, m.Op)...)
		}
		if m.ValidUntil != 0 {
			p.inRange(s, el, 2*grantTTL)
		}
	}
	p.release(s, lease, idRelease)
}

// inRange checks one reply's valid_until and validity_ms against its
// ttl_ms: the call started after the harness sent it and before the
// reply was read (l.at), so its start + ttl_ms is at most l.at + ttl_ms.
func (p *probe) inRange(s *session, l rline, ttl int64) {
	m := l.msg
	end := l.at + ttl*int64(time.Millisecond)
	watchdog := p.has(lockimpl.CapWatchdog)
	switch {
	case m.ValidUntil <= l.at:
		p.failf(ruleValidUntil, &l, sentOf(s, m.Op), "valid_until %d is not in the future: the reply was read at %d on CLOCK_MONOTONIC (%v later)", m.ValidUntil, l.at, time.Duration(l.at-m.ValidUntil))
	case m.ValidUntil > end && !watchdog:
		p.failf(ruleValidUntil, &l, sentOf(s, m.Op), "valid_until %d is %v after the reply was read + ttl_ms (%d), later than the call's start + ttl_ms can be: is it on CLOCK_MONOTONIC in nanoseconds?", m.ValidUntil, time.Duration(m.ValidUntil-end), end)
	case m.ValidityMs < 0 || m.ValidityMs > ttl && !watchdog:
		p.failf(ruleValidUntil, &l, sentOf(s, m.Op), "validity_ms %d is outside 0 .. ttl_ms %d", m.ValidityMs, ttl)
	}
}

// checkRenew: every renew names a lease the worker was granted (the
// session's judge); a lock that claims a watchdog renews a held grant
// within RenewTimeout, with a valid_until in the future.
func checkRenew(p *probe) {
	s := p.client("c1")
	k, lease := p.unique("key"), p.unique("lease")
	p.mustAcquire(s, k, lease, grantTTL, idAcquire)
	if !p.has(lockimpl.CapWatchdog) {
		s.barrier("")
		p.release(s, lease, idRelease)
		p.notef("the lock claims no watchdog: only that renew names granted leases was checked")
		return
	}
	seen := len(s.renews)
	var r rline
	s.until("renew of lease "+lease, RenewTimeout, p.check.ID, ruleRenew, func() bool {
		for _, x := range s.renews[seen:] {
			if x.msg.Lease == lease {
				r = x
				return true
			}
		}
		return false
	})
	if r.msg.ValidUntil != 0 && r.msg.ValidUntil <= r.at {
		p.failf(ruleValidUntil, &r, nil, "renew's valid_until %d is not in the future (read at %d)", r.msg.ValidUntil, r.at)
	}
	p.release(s, lease, idRelease)
}

// checkRound: a round is answered as acquire (op), invoke and reply for
// the section (op_cs), invoke and reply for the release (op_release),
// each stamped with t on CLOCK_MONOTONIC in that order; a worker that
// does not support round says so with not-supported (allowed: only
// scenarios with workload.round: worker send it).
func checkRound(p *probe) {
	s := p.client("c1")
	k, lease := p.unique("key"), p.unique("lease")
	op, ocs, orel := s.newOp(), s.newOp(), s.newOp()
	t0 := history.Now()
	c := worker.Command{Cmd: "round", Op: op, OpCS: ocs, OpRelease: orel, Key: k, Lease: lease, TTLMs: grantTTL}
	b, _ := json.Marshal(c)
	n := s.send(b, sent{cmd: "round", expect: expectAny, op: op, lease: lease})
	s.ops[op].queued = true
	for _, id := range []int64{ocs, orel} {
		s.opSeq++
		s.ops[id] = &opState{line: n, seq: s.opSeq, queued: true, invoke: true}
	}
	s.until("reply to op "+fmt.Sprint(op), ReplyTimeout, p.check.ID, ruleRound, func() bool {
		_, refused := s.lineErr[n]
		return refused || s.ops[op].end != nil
	}, sentOf(s, op)...)
	if e, refused := s.lineErr[n]; refused {
		s.ops[op].queued, s.ops[ocs].queued, s.ops[orel].queued = false, false, false
		if e.msg.Code == worker.CodeNotSupported {
			p.skipf("the worker does not support round (it says not-supported; allowed: only scenarios with workload.round: worker send it)")
		}
		p.failf(ruleRound, &e, sentOf(s, op), "round was refused with code %q: %s", e.msg.Code, e.msg.Error)
	}
	first := *s.ops[op].end
	if first.msg.Status != worker.StatusOK {
		s.ops[ocs].queued, s.ops[orel].queued = false, false
		p.failf(ruleRound, &first, sentOf(s, op), "the round's acquire of a free key gave %s", first.msg.Status)
	}
	csl := s.end(ocs, p.check.ID, ruleRound, ReplyTimeout)
	rel := s.end(orel, p.check.ID, ruleRound, ReplyTimeout)
	steps := []rline{first, *s.ops[ocs].inv, csl, *s.ops[orel].inv, rel}
	prev := t0
	for _, st := range steps {
		if st.msg.T < prev || st.msg.T > st.at {
			p.failf(ruleRound, &st, sentOf(s, op), "t %d is out of order: want it after %d (the previous step, or the round's sending) and before %d (when this line was read)", st.msg.T, prev, st.at)
		}
		prev = st.msg.T
	}
	if csl.msg.Status != worker.StatusOK || rel.msg.Status != worker.StatusOK {
		p.failf(ruleRound, &rel, sentOf(s, op), "the round's section gave %s and its release %s, want ok", csl.msg.Status, rel.msg.Status)
	}
}
