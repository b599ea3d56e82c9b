package runner

import (
	"fmt"
	"time"

	"github.com/lockfault/lockfault/history"
	"github.com/lockfault/lockfault/worker"
)

// roundInvoke hands a round step's `invoke` message to the round waiting
// for it; one that comes after the round gave up is only noted.
func (p *proc) roundInvoke(line int, b []byte, m worker.Message) {
	p.mu.Lock()
	op, ok := p.pending[m.Op]
	p.mu.Unlock()
	switch {
	case !ok:
		p.r.hist.Append(history.Event{Kind: history.Note, Op: "late-invoke", Process: p.name, OpID: m.Op})
		return
	case !op.round:
		p.fault(line, b, fmt.Errorf("invoke for op %d, a %s that is not a step of a round (only a round's steps are invoked by the worker)", m.Op, op.cmd.Cmd))
		return
	}
	// Never block the reader: a round reads its steps' messages as they
	// come, so a full channel means the worker sent more than a round has.
	select {
	case op.ch <- m:
	default:
		p.fault(line, b, fmt.Errorf("invoke for op %d: more messages than a round's three steps have", m.Op))
	}
}

// roundSteps is one round's three steps (acquire, cs, release) as the
// worker reports them: how many were invoked and completed so far.
type roundSteps struct {
	r               *run
	p               *proc
	key, lease, who string
	ops             [3]int64
	cmds            [3]string
	ch              chan worker.Message
	invoked, done   int
	started         time.Time
}

// ev is step i's event, without kind and time.
func (rs *roundSteps) ev(i int) history.Event {
	return history.Event{Process: rs.p.name, Op: rs.cmds[i], OpID: rs.ops[i], Lease: rs.lease, Key: rs.key}
}

// unknown records every step invoked but not completed as info, and
// returns err.
func (rs *roundSteps) unknown(err error) error {
	for i := rs.done; i < rs.invoked; i++ {
		e := rs.ev(i)
		e.Kind, e.Error = history.Info, err.Error()
		rs.r.hist.Append(e)
	}
	return err
}

// handle records one message of the round: the invoke of the next step or
// the completion of the oldest open one. end: the round is over (with err).
func (rs *roundSteps) handle(m worker.Message) (end bool, err error) {
	r, p := rs.r, rs.p
	at := m.T
	if at <= 0 {
		at = history.Now()
	}
	switch {
	case m.Type == worker.TypeInvoke && rs.invoked < 3 && m.Op == rs.ops[rs.invoked] && rs.done == rs.invoked:
		e := rs.ev(rs.invoked)
		e.Kind, e.Time = history.Invoke, at
		r.hist.Append(e)
		r.taps.setOp(rs.who, p.name, rs.cmds[rs.invoked])
		rs.invoked++
		return false, nil
	case m.Type == "reply" && rs.done < rs.invoked && m.Op == rs.ops[rs.done]:
	default:
		r.protocolError(fmt.Sprintf("worker %s: round: %s for op %d out of order (invoked %d, completed %d steps)", p.name, m.Type, m.Op, rs.invoked, rs.done))
		return true, rs.unknown(fmt.Errorf("round out of order"))
	}
	e := rs.ev(rs.done)
	e.Time = at
	r.hist.Append(completion(e, m))
	rs.done++
	switch rs.done {
	case 1: // the acquire
		if m.Status != worker.StatusOK {
			if m.Status == worker.StatusFail && time.Since(rs.started) < time.Millisecond {
				time.Sleep(time.Millisecond) // a lock that refuses without waiting: do not spin
			}
			return true, nil
		}
		r.mu.Lock()
		r.holder = p.name
		r.lastLease[p] = [2]string{rs.key, rs.lease}
		r.mu.Unlock()
		r.events.signal("grant", p.name)
	case 2: // the critical section
		r.mu.Lock()
		if r.holder == p.name {
			r.holder = ""
		}
		r.mu.Unlock()
	case 3:
		return true, nil
	}
	return false, nil
}
