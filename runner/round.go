package runner

import (
	"context"
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

// workerRound is a plain round (workload.round: worker) run by one `round`
// command: the worker acquires, runs the critical section and releases
// without waiting for the harness between the steps. The acquire's invoke
// is recorded here before the command is sent; every other invoke, and
// every completion, is recorded at the time the worker reports for it
// (CLOCK_MONOTONIC, shared by all processes), so each step keeps its own
// invoke and completion times. A step invoked but not completed when the
// worker dies, stays silent or the run is interrupted is recorded as info.
func (r *run) workerRound(ctx context.Context, p *proc, key, lease string) error {
	sc := r.sc
	ops := [3]int64{r.nextOp(), r.nextOp(), r.nextOp()}
	cmds := [3]string{"acquire", "cs", "release"}
	ch := make(chan worker.Message, 8)
	p.mu.Lock()
	for i, op := range ops {
		p.pending[op] = pendingOp{cmd: worker.Command{Cmd: cmds[i], Op: op, Lease: lease}, ch: ch, round: true}
	}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		for _, op := range ops {
			delete(p.pending, op)
		}
		p.mu.Unlock()
	}()
	ev := func(i int) history.Event {
		return history.Event{Process: p.name, Op: cmds[i], OpID: ops[i], Lease: lease, Key: key}
	}
	invoked, done := 1, 0
	unknown := func(err error) error {
		for i := done; i < invoked; i++ {
			e := ev(i)
			e.Kind, e.Error = history.Info, err.Error()
			r.hist.Append(e)
		}
		return err
	}
	inv := ev(0)
	inv.Kind = history.Invoke
	r.hist.Append(inv)
	who := r.identity(p.name)
	r.taps.setOp(who, p.name, cmds[0])
	defer r.taps.setOp(who, p.name, "")
	started := time.Now()
	c := worker.Command{Cmd: "round", Op: ops[0], OpCS: ops[1], OpRelease: ops[2], Key: key, Lease: lease,
		TTLMs: sc.Lock.TTL.D().Milliseconds(), WaitMs: sc.Lock.Wait.D().Milliseconds(), HoldMs: sc.Workload.Hold.D().Milliseconds()}
	if err := p.Send(c); err != nil {
		return unknown(errDead)
	}
	timeout := r.opTimeout()
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		var m worker.Message
		select {
		case m = <-ch:
		case <-p.dead:
			// Messages the worker wrote before it died are still read.
			select {
			case m = <-ch:
			default:
				return unknown(errDead)
			}
		case <-t.C:
			return unknown(fmt.Errorf("no reply within %v", timeout))
		case <-r.ctx.Done():
			return unknown(r.ctx.Err())
		}
		t.Reset(timeout)
		at := m.T
		if at <= 0 {
			at = history.Now()
		}
		switch {
		case m.Type == worker.TypeInvoke && invoked < 3 && m.Op == ops[invoked] && done == invoked:
			e := ev(invoked)
			e.Kind, e.Time = history.Invoke, at
			r.hist.Append(e)
			r.taps.setOp(who, p.name, cmds[invoked])
			invoked++
			continue
		case m.Type == "reply" && done < invoked && m.Op == ops[done]:
		default:
			r.protocolError(fmt.Sprintf("worker %s: round: %s for op %d out of order (invoked %d, completed %d steps)", p.name, m.Type, m.Op, invoked, done))
			return unknown(fmt.Errorf("round out of order"))
		}
		e := ev(done)
		e.Time = at
		r.hist.Append(completion(e, m))
		done++
		switch done {
		case 1: // the acquire
			if m.Status != worker.StatusOK {
				if m.Status == worker.StatusFail && time.Since(started) < time.Millisecond {
					time.Sleep(time.Millisecond) // a lock that refuses without waiting: do not spin
				}
				return nil
			}
			r.mu.Lock()
			r.holder = p.name
			r.lastLease[p] = [2]string{key, lease}
			r.mu.Unlock()
			r.events.signal("grant", p.name)
		case 2: // the critical section
			r.mu.Lock()
			if r.holder == p.name {
				r.holder = ""
			}
			r.mu.Unlock()
		case 3:
			return nil
		}
	}
}
