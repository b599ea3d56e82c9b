package runner

import (
	"context"
	"sync"
	"time"

	"github.com/lockfault/lockfault/scenarios"
	"github.com/lockfault/lockfault/worker"
)

// pokeEvery is how often a cutting quiesce or drain repeats its `cut` to the
// workers: a critical section whose command was on its way when the first
// cut went out is cut by the next one.
const pokeEvery = 20 * time.Millisecond

// cutMode: the scenario lets the harness end holds early (workload.quiesce: cut).
func (r *run) cutMode() bool { return r.sc.Workload.Quiesce == scenarios.QuiesceCut }

// cutting reports whether a round granted now must give the lock back at
// once, without a critical section: in cut mode, while the gate is closed
// or the workload is stopping (ctx is the workload's context).
func (r *run) cutting(ctx context.Context) bool {
	if !r.cutMode() {
		return false
	}
	if ctx.Err() != nil {
		return true
	}
	r.gate.mu.Lock()
	defer r.gate.mu.Unlock()
	return r.gate.closed
}

// quiesce stops new acquires and waits until nobody holds or is acquiring.
// In cut mode the holds under way are cut short and late grants released at
// once, so the lock is free within milliseconds instead of a hold (or a
// hold per client still acquiring).
func (r *run) quiesce(ctx context.Context) error {
	timeout := r.sc.Lock.TTL.D() + r.sc.Workload.Hold.D() + r.sc.Lock.Wait.D() + 10*time.Second
	var poke func()
	if r.cutMode() {
		poke = r.cutHolds
	}
	return r.gate.quiesce(ctx, timeout, poke)
}

// cutHolds sends `cut` to every worker: a critical section waiting out its
// hold writes at once. Errors are ignored (a dead worker has no hold).
func (r *run) cutHolds() {
	r.mu.Lock()
	ps := make([]*proc, 0, len(r.procs))
	for _, p := range r.procs {
		ps = append(ps, p)
	}
	r.mu.Unlock()
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
// runs out (every operation is bounded by opTimeout).
func (r *run) drain(wg *sync.WaitGroup) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	if !r.cutMode() {
		<-done
		return
	}
	r.cutHolds()
	t := time.NewTicker(pokeEvery)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			r.cutHolds()
		}
	}
}
