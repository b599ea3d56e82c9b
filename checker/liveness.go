package checker

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/lockfault/lockfault/history"
)

// gaps returns, per key, the stretches with no holder in which clients were
// trying to acquire: the complement of the key's holds within the span of
// its acquire activity, cut to the parts in which an acquire was under way
// (a key nobody asked for while it was free was not unavailable to
// anyone). Check computes it once (in.gaps) for both of its readers.
//
// One sweep per key: the free stretches and the acquire calls are both in
// time order, so each call is clipped into the one stretch its invocation
// falls in, and the calls invoked before a stretch matter only through the
// latest of their ends (a running maximum), whatever their number.
func gaps(in *input) map[string][][2]int64 {
	out := map[string][][2]int64{}
	for k, a := range acquireActivity(in) {
		free := freeStretches(in, k, a)
		// Free stretches are disjoint and in time order, and so are the
		// calls' invocations: j only moves forward.
		j := 0
		var endBefore int64 = -1 << 63 // the latest end of the calls invoked before the stretch
		for _, f := range free {
			for j < len(a.tries) && a.tries[j][0] < f.a {
				in.work.add(1)
				endBefore = max(endBefore, a.tries[j][1])
				j++
			}
			// The stretch's parts in which clients kept trying: its acquire
			// calls, joined across pauses of at most tryingGap (a client's
			// think time between tries).
			var parts [][2]int64
			if endBefore > f.a { // a call invoked before the stretch still under way in it
				parts = append(parts, [2]int64{f.a, min(endBefore, f.b)})
			}
			for i := j; i < len(a.tries) && a.tries[i][0] < f.b; i++ {
				in.work.add(1)
				t := a.tries[i]
				if t[1] <= f.a {
					continue
				}
				p := [2]int64{t[0], min(t[1], f.b)}
				if n := len(parts); n > 0 && p[0]-parts[n-1][1] <= int64(tryingGap) {
					parts[n-1][1] = max(parts[n-1][1], p[1])
					continue
				}
				parts = append(parts, p)
			}
			out[k] = append(out[k], parts...)
		}
	}
	return out
}

// keyActivity is the acquire activity on one key: the span from its first
// to its last acquire event, and its acquire calls.
type keyActivity struct {
	first, last int64
	tries       [][2]int64 // acquire calls: invoke, completion (or the end), ordered by invoke
}

// acquireActivity is the acquire activity of every key of the history.
func acquireActivity(in *input) map[string]*keyActivity {
	acts := map[string]*keyActivity{}
	open := map[int64]int{} // op id -> index in its key's tries
	in.work.add(len(in.events))
	for i, e := range in.events {
		if e.Op != history.OpAcquire {
			continue
		}
		k := in.evKeys[i]
		a := acts[k]
		if a == nil {
			a = &keyActivity{first: e.Time}
			acts[k] = a
		}
		a.last = e.Time
		if e.Kind == history.Invoke {
			open[e.OpID] = len(a.tries)
			a.tries = append(a.tries, [2]int64{e.Time, 1<<63 - 1})
		} else if j, ok := open[e.OpID]; ok && j < len(a.tries) {
			a.tries[j][1] = e.Time
			delete(open, e.OpID)
		}
	}
	return acts
}

// interval is a stretch of time [a, b).
type interval struct{ a, b int64 }

// freeStretches are the stretches of key k's acquire span with no holder,
// in time order: a hold keeps the key until its End, or its KeptUntil
// when later (its late extends showed the key was still its own).
func freeStretches(in *input, k string, a *keyActivity) []interval {
	var free []interval
	cur := a.first
	for _, hi := range in.byKey[k] { // ordered by start
		in.work.add(1)
		h := in.holds[hi]
		end := max(h.End, h.KeptUntil) // the key held, by the lease's own account or by its late extends
		if end <= cur {
			continue
		}
		if h.Start > cur {
			free = append(free, interval{cur, min(h.Start, a.last)})
		}
		cur = max(cur, end)
		if cur >= a.last {
			break
		}
	}
	if cur < a.last {
		free = append(free, interval{cur, a.last})
	}
	return free
}

// tryingGap: two acquire calls at most this far apart are one stretch of
// trying (a client thinks between tries).
const tryingGap = 1500 * time.Millisecond

func maxUnavailable(in *input) int64 {
	var m int64
	for _, gs := range in.gaps {
		in.work.add(len(gs))
		for _, g := range gs {
			m = max(m, g[1]-g[0])
		}
	}
	return m
}

// stuckPass reports, per key, every stretch longer than StuckAfter in which
// clients kept trying and nobody held the lock. A stretch that is that long
// only with the harness's own stalls in it (Result.Stalls: its path to the
// nodes answered late with no fault on) is not the lock's to answer for:
// its liveness is unknown.
func stuckPass(in *input) []Finding {
	if in.opt.StuckAfter <= 0 {
		return nil
	}
	limit := in.opt.StuckAfter
	var out []Finding
	var ends []int64 // stallEnds, at the first stretch over the limit
	for _, k := range in.keys {
		in.work.add(1 + len(in.gaps[k]))
		for _, g := range in.gaps[k] {
			d := time.Duration(g[1] - g[0])
			if d <= limit {
				continue
			}
			what := fmt.Sprintf("nobody acquired the lock for %v although clients kept trying (limit %v)", d.Round(time.Millisecond), limit)
			if ends == nil {
				ends = stallEnds(in.res.Stalls)
				in.work.add(len(ends))
			}
			s := time.Duration(stalled(in.res.Stalls, ends, g[0], g[1], &in.work))
			if s > 0 {
				what += fmt.Sprintf("; the harness's own path to the nodes stalled for %v of it with no fault on (path-slow notes)", s.Round(time.Millisecond))
			}
			if d-s <= limit {
				out = append(out, Finding{Class: ClassUnknown, Key: k, From: g[0], To: g[1],
					Detail: what + ": without those stalls the stretch is within the limit, so the lock's liveness cannot be judged"})
				continue
			}
			out = append(out, Finding{Class: ClassStuck, Key: k, From: g[0], To: g[1], Detail: what + slowCalls(in.events, g[0], g[1], &in.work)})
		}
	}
	return out
}

// penalties: for each fault, the time from its start to the next grant.
func penalties(faults []Window, holds []Hold, w *work) []int64 {
	w.add(len(faults))
	var out []int64
	// holds are ordered by start.
	for _, f := range faults {
		i := sort.Search(len(holds), func(i int) bool { return holds[i].Start >= f.Start })
		if i < len(holds) {
			out = append(out, holds[i].Start-f.Start)
		}
	}
	return out
}

// maxSlowCallsQuoted bounds the slow-call notes a stuck finding quotes.
const maxSlowCallsQuoted = 3

// slowCalls quotes the last slow-call note of each process within [from,
// to] (what its worker was doing while its call went unanswered: blocked,
// or stopped), at most maxSlowCallsQuoted of them.
func slowCalls(events []history.Event, from, to int64, w *work) string {
	last := map[string]string{}
	var order []string
	first := sort.Search(len(events), func(i int) bool { return events[i].Time >= from }) // events are in time order
	for _, e := range events[first:] {
		if e.Time > to {
			break
		}
		w.add(1)
		if e.Kind != history.Note || e.Op != history.NoteSlowCall {
			continue
		}
		if _, ok := last[e.Process]; !ok {
			order = append(order, e.Process)
		}
		last[e.Process] = e.Detail
	}
	var b strings.Builder
	for i, p := range order {
		if i == maxSlowCallsQuoted {
			fmt.Fprintf(&b, "; and %d more", len(order)-i)
			break
		}
		b.WriteString("; " + last[p])
	}
	return b.String()
}
