package checker

import (
	"sort"

	"github.com/lockfault/lockfault/history"
)

// Stalls are the stretches in which the harness's own path to the nodes
// stalled (its "path-slow" notes: a probe through a never-faulted proxy, or
// the harness's timer, PathSlow late or more) while no fault of the
// schedule was on: a fault's own effect on the path is the fault's. Each is
// a Window of fault "path-slow" on the note's target, in time order.
func Stalls(events []history.Event, faults []Window) []Window {
	var out []Window
	for _, e := range events {
		if e.Kind != history.Note || e.Op != history.NotePathSlow || e.DurationMs <= 0 {
			continue
		}
		w := Window{Fault: history.NotePathSlow, Target: e.Target, Start: e.Time - e.DurationMs*1e6, End: e.Time, Cycle: e.Cycle}
		out = append(out, cutOut(w, faults)...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	return out
}

// cutOut returns the parts of w outside every fault window (a window with
// End 0 lasts to the end of the history).
func cutOut(w Window, faults []Window) []Window {
	parts := []Window{w}
	for _, f := range faults {
		end := f.End
		if end == 0 {
			end = 1<<63 - 1
		}
		var next []Window
		for _, p := range parts {
			if end <= p.Start || f.Start >= p.End {
				next = append(next, p)
				continue
			}
			if f.Start > p.Start {
				a := p
				a.End = f.Start
				next = append(next, a)
			}
			if end < p.End {
				b := p
				b.Start = end
				next = append(next, b)
			}
		}
		parts = next
	}
	return parts
}

// Stalled is how much of [from, to] the stalls cover (overlapping stalls,
// of different targets, count once).
func Stalled(stalls []Window, from, to int64) int64 {
	var total, cur int64 = 0, from
	for _, s := range stalls { // ordered by start
		a, b := max(s.Start, cur), min(s.End, to)
		if b > a {
			total += b - a
			cur = b
		}
	}
	return total
}
