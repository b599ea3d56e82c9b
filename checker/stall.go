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
	return stalls(events, faults, nil)
}

func stalls(events []history.Event, faults []Window, w *work) []Window {
	w.add(len(events))
	var out []Window
	var cover []Window // the faults' union, computed at the first stall
	for _, e := range events {
		if e.Kind != history.Note || e.Op != history.NotePathSlow || e.DurationMs <= 0 {
			continue
		}
		if cover == nil {
			cover = union(faults, w)
		}
		win := Window{Fault: history.NotePathSlow, Target: e.Target, Start: e.Time - e.DurationMs*1e6, End: e.Time, Cycle: e.Cycle}
		out = append(out, cutOut(win, cover, w)...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	return out
}

// union merges the faults' windows (an open one runs to the end of time)
// into disjoint windows ordered by start; touching windows merge. It is
// never nil.
func union(faults []Window, w *work) []Window {
	ws := make([]Window, 0, len(faults))
	for _, f := range faults {
		if f.End == 0 {
			f.End = 1<<63 - 1
		}
		ws = append(ws, Window{Start: f.Start, End: f.End})
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i].Start < ws[j].Start })
	w.add(len(ws))
	out := ws[:0]
	for _, f := range ws {
		if n := len(out); n > 0 && f.Start <= out[n-1].End {
			out[n-1].End = max(out[n-1].End, f.End)
			continue
		}
		out = append(out, f)
	}
	return out
}

// cutOut removes from w the parts that cover (disjoint, ordered by start)
// spans: what of a stall happened with no fault on.
func cutOut(win Window, cover []Window, w *work) []Window {
	// The first covering window that ends after win starts.
	i := sort.Search(len(cover), func(i int) bool { return cover[i].End > win.Start })
	var parts []Window
	cur := win
	for ; i < len(cover) && cover[i].Start < cur.End; i++ {
		w.add(1)
		c := cover[i]
		if c.Start > cur.Start {
			a := cur
			a.End = c.Start
			parts = append(parts, a)
		}
		if c.End >= cur.End {
			return parts
		}
		cur.Start = max(cur.Start, c.End)
	}
	return append(parts, cur)
}

func Stalled(stalls []Window, from, to int64) int64 {
	return stalled(stalls, nil, from, to, nil)
}

// stallEnds is, for stalls ordered by start, the latest end among each
// prefix of them: the stalls before the first prefix that reaches past an
// instant all ended by it.
func stallEnds(stalls []Window) []int64 {
	out := make([]int64, len(stalls))
	var m int64 = -1 << 63
	for i, s := range stalls {
		m = max(m, s.End)
		out[i] = m
	}
	return out
}

// stalled is Stalled; with ends (stallEnds of stalls) it skips the stalls
// that ended before from and stops at the first that begins after to.
func stalled(stalls []Window, ends []int64, from, to int64, w *work) int64 {
	first := 0
	if ends != nil {
		first = sort.Search(len(ends), func(i int) bool { return ends[i] > from })
	}
	var total, cur int64 = 0, from
	for _, s := range stalls[first:] { // ordered by start
		w.add(1)
		if ends != nil && s.Start >= to {
			break
		}
		a, b := max(s.Start, cur), min(s.End, to)
		if b > a {
			total += b - a
			cur = b
		}
	}
	return total
}
