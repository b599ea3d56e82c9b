package report

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lockfault/lockfault/checker"
	"github.com/lockfault/lockfault/history"
)

// Span is the time frame of a run: every time in a report is shown as
// seconds since t0 (the first event), and unhealed faults run to end.
type Span struct {
	t0, End int64 // monotonic ns
}

// RunSpan finds the first and last instants of a run from its events,
// falling back to the checker's holds, faults and findings.
func RunSpan(events []history.Event, res *checker.Result) Span {
	var s Span
	first := true
	see := func(t int64) {
		if t == 0 {
			return
		}
		if first {
			s.t0, s.End, first = t, t, false
			return
		}
		s.t0, s.End = min(s.t0, t), max(s.End, t)
	}
	for _, e := range events {
		see(e.Time)
	}
	if res != nil {
		for _, h := range res.Holds {
			see(h.Start)
			see(h.EffectiveEnd())
		}
		for _, w := range res.Faults {
			see(w.Start)
			see(w.End)
		}
		for _, f := range res.Findings {
			see(f.From)
			see(f.To)
		}
	}
	return s
}

// Sec converts a monotonic time to seconds since the start of the run.
func (s Span) Sec(t int64) float64 { return float64(t-s.t0) / 1e9 }

// secs formats a monotonic time as seconds since the start of the run.
func (s Span) secs(t int64) string { return fmt.Sprintf("%.3f", s.Sec(t)) }

// WindowEnd is a fault window's end, or the end of the run if unhealed.
func (s Span) WindowEnd(w checker.Window) int64 {
	if w.End == 0 {
		return s.End
	}
	return w.End
}

// Dur formats nanoseconds as a rounded duration.
func Dur(ns int64) string {
	d := time.Duration(ns)
	switch {
	case d == 0:
		return "0"
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Minute:
		return d.Round(time.Millisecond).String()
	}
	return d.Round(100 * time.Millisecond).String()
}

// FaultName names a fault window, with its target if any.
func FaultName(w checker.Window) string {
	if w.Target == "" {
		return w.Fault
	}
	return w.Fault + "(" + w.Target + ")"
}

// ClassList renders observed classes; nothing observed reads as safe.
func ClassList(cs []string) string {
	if len(cs) == 0 {
		return checker.ClassSafe
	}
	return strings.Join(cs, ", ")
}

// VerdictOf is the verdict of a result, or a note when there is none.
func VerdictOf(res *checker.Result) string {
	if res == nil || res.Verdict == "" {
		return "none (no result)"
	}
	return res.Verdict
}

// YesNo renders a match.
func YesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "NO"
}

// sortNatural sorts names so that c2 comes before c10.
func sortNatural(names []string) {
	sort.Slice(names, func(i, j int) bool { return naturalLess(names[i], names[j]) })
}

func naturalLess(a, b string) bool {
	pa, na := splitNum(a)
	pb, nb := splitNum(b)
	if pa != pb {
		return pa < pb
	}
	if na != nb {
		return na < nb
	}
	return a < b
}

// splitNum splits a trailing decimal number off a name: "c12" -> ("c", 12).
func splitNum(s string) (string, int) {
	i := len(s)
	for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
		i--
	}
	n, err := strconv.Atoi(s[i:])
	if err != nil {
		return s, -1
	}
	return s[:i], n
}

// Clients lists every client named in a history or in the checker's holds,
// in natural order.
func Clients(events []history.Event, res *checker.Result) []string {
	seen := map[string]bool{}
	for _, e := range events {
		switch e.Kind {
		case history.FaultStart, history.FaultEnd:
			continue
		}
		if e.Process != "" {
			seen[e.Process] = true
		}
	}
	if res != nil {
		for _, h := range res.Holds {
			seen[h.Process] = true
		}
		for _, f := range res.Findings {
			for _, c := range f.Clients {
				seen[c] = true
			}
		}
	}
	var out []string
	for c := range seen {
		out = append(out, c)
	}
	sortNatural(out)
	return out
}

// CycleStart is one "note cycle" event.
type CycleStart struct {
	N int
	T int64
}

// Cycles lists the cycle starts of a history, numbered from 1 in time order.
func Cycles(events []history.Event) []CycleStart {
	var ts []int64
	for _, e := range events {
		if e.Kind == history.Note && e.Op == "cycle" {
			ts = append(ts, e.Time)
		}
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
	out := make([]CycleStart, len(ts))
	for i, t := range ts {
		out[i] = CycleStart{N: i + 1, T: t}
	}
	return out
}
