package worker

import "github.com/lockfault/lockfault/history"

// round runs a whole round on its own: acquire (op), then, if granted, the
// critical section (op_cs) and the release (op_release), with no harness
// round trip between the steps. Each step after the acquire is announced
// by an `invoke` message stamped when it begins, and every step's reply
// carries the time it completed, so the harness records each step with its
// own invoke and completion times. The release follows the critical
// section whatever its outcome, as the harness's own rounds do.
func (w *Worker) round(c Command) {
	m := w.do(Command{Cmd: "acquire", Op: c.Op, Key: c.Key, Lease: c.Lease, TTLMs: c.TTLMs, WaitMs: c.WaitMs})
	m.T = history.Now()
	w.send(m)
	if m.Status != StatusOK {
		return
	}
	w.send(Message{Type: TypeInvoke, Op: c.OpCS, T: history.Now()})
	m = w.do(Command{Cmd: "cs", Op: c.OpCS, Lease: c.Lease, HoldMs: c.HoldMs})
	m.T = history.Now()
	w.send(m)
	w.send(Message{Type: TypeInvoke, Op: c.OpRelease, T: history.Now()})
	m = w.do(Command{Cmd: "release", Op: c.OpRelease, Lease: c.Lease})
	m.T = history.Now()
	w.send(m)
}
