package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/lockfault/lockfault/history"
	"github.com/lockfault/lockfault/worker"
)

// recorder is a run's record: the history every part appends to, the
// progress log, the workers' stderr, the cycle under way, and the first
// protocol violation, which ends the run.
type recorder struct {
	hist      *history.Writer
	log       io.Writer
	workerLog *capWriter // workers.log, bounded
	// abort ends the run with a cause (the first protocol violation).
	abort      context.CancelCauseFunc
	cgroupOnce sync.Once // noCgroup's note

	cycleMu sync.Mutex
	cycle   int // the nemesis's cycle under way (0: before the first)
}

// setCycle makes c the cycle that the events recorded from now on carry.
func (rec *recorder) setCycle(c int) {
	rec.cycleMu.Lock()
	rec.cycle = c
	rec.cycleMu.Unlock()
}

// notExercised records that a worker could not do what a step asked: a
// note {op: not-exercised}. The step's fault did not happen, so whatever
// it was meant to exercise was not exercised.
func (rec *recorder) notExercised(p *proc, detail string) {
	rec.hist.Append(history.Event{Kind: history.Note, Op: "not-exercised", Process: p.name, Detail: detail, Cycle: rec.currentCycle()})
}

// failpointFired records that an armed failpoint triggered in a worker: a
// note {op: failpoint-fired, process, detail: "<name> <action>"}. The worker
// sends it before acting, so a crash failpoint is recorded too.
func (rec *recorder) failpointFired(p *proc, m worker.Message) {
	rec.hist.Append(history.Event{Kind: history.Note, Op: "failpoint-fired", Process: p.name, Detail: m.Name + " " + m.Action, Cycle: rec.currentCycle()})
}

// boundEvents ends the run when its history passes MaxEvents.
func (rec *recorder) boundEvents(ctx context.Context) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				if n := rec.hist.Count(); n > MaxEvents {
					rec.protocolError(fmt.Sprintf("the run recorded %d events (allowed: at most %d, MaxEvents)", n, MaxEvents))
					return
				}
			}
		}
	}()
	return func() { close(done) }
}

func (rec *recorder) note(op, detail string) {
	rec.hist.Append(history.Event{Kind: history.Note, Op: op, Detail: detail, Cycle: rec.currentCycle()})
}

func (rec *recorder) currentCycle() int {
	rec.cycleMu.Lock()
	defer rec.cycleMu.Unlock()
	return rec.cycle
}

// noCgroup notes once that worker descendants are tracked by process
// group only.
func (rec *recorder) noCgroup(err error) {
	rec.cgroupOnce.Do(func() {
		rec.note("setup", "worker descendants are tracked by process group only (no cgroup per worker: "+err.Error()+")")
	})
}

// protocolError ends the run at once: a worker broke the protocol or a
// bound, so nothing it reports from here on can be trusted. The first such
// error is the run's error (a harness error, exit 2).
func (rec *recorder) protocolError(msg string) {
	rec.hist.Append(history.Event{Kind: history.Note, Op: "protocol-error", Detail: msg})
	fmt.Fprintln(rec.log, msg)
	if rec.abort != nil {
		rec.abort(errors.New(msg)) // only the first cause is kept
	}
}
