// Package reportfixture holds hand-made histories for the tests of the
// report writers (packages report, pages, plots): a builder with a clock in
// milliseconds, and a race between two clients with its run's Meta.
package reportfixture

import (
	"testing"
	"time"

	"github.com/lockfault/lockfault/checker"
	"github.com/lockfault/lockfault/history"
	"github.com/lockfault/lockfault/report"
)

const ms = int64(time.Millisecond)

// History builds hand-made histories with a clock in milliseconds, starting at
// an arbitrary monotonic offset as real histories do.
type History struct {
	ev []history.Event
	op int64
}

// Events are the events added so far.
func (h *History) Events() []history.Event { return h.ev }

// base is where the histories' monotonic clock starts.
const base = 5_000_000 * ms

// Add appends an event, its time counted (in nanoseconds) from the
// history's start.
func (h *History) Add(e history.Event) {
	e.Time += base
	e.Seq = int64(len(h.ev) + 1)
	h.ev = append(h.ev, e)
}

func (h *History) Grant(p, lease string, inv, ok, validUntil, fence int64) {
	h.op++
	h.Add(history.Event{Time: inv * ms, Kind: history.Invoke, Process: p, Op: history.OpAcquire, OpID: h.op})
	vu := int64(0)
	if validUntil > 0 {
		vu = base + validUntil*ms
	}
	h.Add(history.Event{Time: ok * ms, Kind: history.OK, Process: p, Op: history.OpAcquire, OpID: h.op, Lease: lease, ValidUntil: vu, Fence: fence})
}

func (h *History) Fail(p string, inv, at int64) {
	h.op++
	h.Add(history.Event{Time: inv * ms, Kind: history.Invoke, Process: p, Op: history.OpAcquire, OpID: h.op})
	h.Add(history.Event{Time: at * ms, Kind: history.Fail, Process: p, Op: history.OpAcquire, OpID: h.op})
}

func (h *History) Release(p, lease string, at int64) {
	h.op++
	h.Add(history.Event{Time: at * ms, Kind: history.Invoke, Process: p, Op: history.OpRelease, OpID: h.op, Lease: lease})
	h.Add(history.Event{Time: (at + 1) * ms, Kind: history.OK, Process: p, Op: history.OpRelease, OpID: h.op, Lease: lease})
}

func (h *History) Access(p, lease, kind string, at, value int64) {
	h.Add(history.Event{Time: at * ms, Kind: history.Access, Process: p, Lease: lease, Access: kind, Value: history.Int64(value)})
}

// CS is a critical section reading v at r and writing v+1 at w.
func (h *History) CS(p, lease string, r, w, v int64) {
	h.op++
	h.Add(history.Event{Time: r * ms, Kind: history.Invoke, Process: p, Op: history.OpCS, OpID: h.op, Lease: lease})
	h.Access(p, lease, "read", r, v)
	h.Access(p, lease, "write", w, v+1)
	h.Add(history.Event{Time: w * ms, Kind: history.OK, Process: p, Op: history.OpCS, OpID: h.op, Lease: lease, Read: history.Int64(v), Wrote: history.Int64(v + 1)})
}

func (h *History) Fault(name, target string, start, end int64, cycle int) {
	h.Add(history.Event{Time: start * ms, Kind: history.FaultStart, Fault: name, Target: target, Cycle: cycle})
	if end > 0 {
		h.Add(history.Event{Time: end * ms, Kind: history.FaultEnd, Fault: name, Target: target, Cycle: cycle})
	}
}

func (h *History) Cycle(n int, at int64) {
	h.Add(history.Event{Time: at * ms, Kind: history.Note, Op: "cycle", Cycle: n})
}

// Race: two clients, two cycles. Cycle 1 is clean. In cycle 2 a
// pause fault stops c1 between its read and its write, past its lease's
// validity; c2 gets the lock and does a whole section; c1 then writes,
// losing c2's increment (a stale-access overlap and a lost update).
func Race() []history.Event {
	var h History
	h.Cycle(1, 0)
	h.Grant("c1", "c1-1", 0, 2, 200, 0)
	h.CS("c1", "c1-1", 5, 40, 0)
	h.Release("c1", "c1-1", 45)
	h.Fail("c2", 10, 30)
	h.Grant("c2", "c2-1", 35, 50, 250, 0)
	h.CS("c2", "c2-1", 55, 90, 1)
	h.Release("c2", "c2-1", 95)

	h.Cycle(2, 300)
	h.Grant("c1", "c1-2", 300, 302, 500, 0)
	h.Access("c1", "c1-2", "read", 310, 2)
	h.Fault("pause", "c1", 320, 700, 2)
	h.Fail("c2", 320, 400)
	h.Grant("c2", "c2-2", 410, 510, 710, 0)
	h.CS("c2", "c2-2", 515, 560, 2)
	h.Release("c2", "c2-2", 600)
	h.Access("c1", "c1-2", "write", 705, 3) // stale: c1's lease ran out at 500
	h.Release("c1", "c1-2", 710)
	return h.ev
}

// RaceMeta describes Race as a run that expects corruption.
func RaceMeta() report.Meta {
	return report.Meta{
		Scenario: "gc-pause", Claim: "A client paused past its lease corrupts the resource without fencing",
		Description: "Stop c1 between read and write for longer than the lease.", Lock: "single-setnx",
		Backend: "process", RunID: "test-1", Seed: 42,
		Expect: []string{checker.ClassCorruption}, Allow: []string{checker.ClassOverlap},
		Started: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), Duration: 1500 * time.Millisecond,
		Schedule: []string{"cycle 1: no fault", "cycle 2: pause c1 for 380ms"},
	}
}

// Check checks ev and records in meta whether it matched.
func Check(t testing.TB, ev []history.Event, meta *report.Meta) *checker.Result {
	t.Helper()
	res := checker.Check(append([]history.Event(nil), ev...), checker.Options{StuckAfter: 5 * time.Second})
	meta.Matched, meta.Why = checker.Match(res.Observed, meta.Expect, meta.Allow)
	return res
}
