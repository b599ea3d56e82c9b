package runner

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/lockfault/lockfault/scenarios"
	"github.com/lockfault/lockfault/worker"
)

// pokeEvery is how often a cutting quiesce or drain repeats its `cut` to the
// workers: a critical section whose command was on its way when the first
// cut went out is cut by the next one.
const pokeEvery = 20 * time.Millisecond

// quiescer ends holds: it stops new acquires and waits for the lock to be
// free (a quiesce step), and at the end of the workload waits for the
// client loops, in cut mode cutting the holds under way short.
type quiescer struct {
	r *run
}

// cutMode: the scenario lets the harness end holds early (workload.quiesce: cut).
func (q *quiescer) cutMode() bool { return q.r.sc.Workload.Quiesce == scenarios.QuiesceCut }

// cutting reports whether a round granted now must give the lock back at
// once, without a critical section: in cut mode, while the gate is closed
// or the workload is stopping (ctx is the workload's context).
func (q *quiescer) cutting(ctx context.Context) bool {
	if !q.cutMode() {
		return false
	}
	if ctx.Err() != nil {
		return true
	}
	q.r.gate.mu.Lock()
	defer q.r.gate.mu.Unlock()
	return q.r.gate.closed
}

// quiesce stops new acquires and waits until nobody holds or is acquiring.
// In cut mode the holds under way are cut short and late grants released at
// once, so the lock is free within milliseconds instead of a hold (or a
// hold per client still acquiring).
func (q *quiescer) quiesce(ctx context.Context) error {
	timeout := q.r.sc.Lock.TTL.D() + q.r.sc.Workload.Hold.D() + q.r.sc.Lock.Wait.D() + 10*time.Second
	var poke func()
	if q.cutMode() {
		poke = q.cutHolds
	}
	return q.r.gate.quiesce(ctx, timeout, poke)
}

// cutHolds sends `cut` to every worker: a critical section waiting out its
// hold writes at once. Errors are ignored (a dead worker has no hold).
func (q *quiescer) cutHolds() {
	q.r.mu.Lock()
	ps := make([]*proc, 0, len(q.r.procs))
	for _, p := range q.r.procs {
		ps = append(ps, p)
	}
	q.r.mu.Unlock()
	for _, p := range ps {
		select {
		case <-p.dead:
		default:
			p.Send(worker.Command{Cmd: "cut"})
		}
	}
}

// drain waits for the client loops to finish their rounds after the
// workload was stopped. In cut mode the holds under way are cut short, so
// the run ends within milliseconds of the last step; otherwise each round
// runs out. Either way an operation still in flight after bound is given
// up (recorded as info, its outcome unknown), as one without a reply
// within opTimeout is: after the last heal a working client finishes its
// round within bound, and a worker stuck in its own wait (a critical
// section timed on a clock stepped back by minutes) no longer holds the
// run for opTimeout's minute.
func (q *quiescer) drain(wg *sync.WaitGroup, bound time.Duration) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	giveUp := time.NewTimer(bound)
	defer giveUp.Stop()
	var poke <-chan time.Time
	if q.cutMode() {
		q.cutHolds()
		t := time.NewTicker(pokeEvery)
		defer t.Stop()
		poke = t.C
	}
	for {
		select {
		case <-done:
			return
		case <-poke:
			q.cutHolds()
		case <-giveUp.C:
			q.r.endOps(fmt.Errorf("no reply within %v of the workload's end", bound))
		}
	}
}

// drainBound is how long the rounds under way when the workload stops may
// take to finish: every acquire of a round (re-entries too) waiting its
// longest, its extends, its hold, two TTLs for a hold until the validity
// and the release, and 10 s for a slow machine.
func drainBound(sc *scenarios.Scenario) time.Duration {
	w := sc.Workload
	return time.Duration(1+w.Reentry)*sc.Lock.Wait.D() + time.Duration(w.Extends)*w.ExtendEvery.D() +
		w.Hold.D() + 2*sc.Lock.TTL.D() + 10*time.Second
}
