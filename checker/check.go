package checker

import (
	"sort"
	"time"

	"github.com/lockfault/lockfault/history"
)

// Options tune a check.
type Options struct {
	// StuckAfter: a stretch longer than this with no holder while clients
	// kept trying is a liveness failure. Zero disables the check.
	StuckAfter time.Duration
	// LinearizabilityTimeout bounds porcupine (0: 30 s).
	LinearizabilityTimeout time.Duration
}

// Check runs every checker over a history.
func Check(events []history.Event, opt Options) *Result {
	sort.SliceStable(events, func(i, j int) bool { return events[i].Time < events[j].Time })
	r := &Result{}
	r.Holds = Holds(events)
	r.Faults = Faults(events)
	cycles := cycleStarts(events)
	r.Stats = stats(events, r.Holds)
	r.Stats.Cycles = len(cycles)

	findings := Overlaps(r.Holds, events)
	corr, lin := Corruption(events)
	r.Linearizable = lin
	findings = append(findings, corr...)
	findings = append(findings, NotExercised(events)...)
	findings = append(findings, Unavailable(events)...)
	if opt.StuckAfter > 0 {
		findings = append(findings, Stuck(events, r.Holds, opt.StuckAfter)...)
	}
	r.Stats.MaxUnavailable = maxUnavailable(events, r.Holds)
	r.Stats.PenaltyNs = penalties(r.Faults, r.Holds)
	for i := range findings {
		f := &findings[i]
		f.Faults = faultsAround(r.Faults, f.From, f.To)
		f.Cycle = cycleOf(cycles, f.From)
	}
	sort.SliceStable(findings, func(i, j int) bool { return findings[i].From < findings[j].From })
	r.Findings = findings

	seen := map[string]bool{}
	r.CycleObserved = make([][]string, len(cycles))
	perCycle := make([]map[string]bool, len(cycles))
	for _, f := range findings {
		seen[f.Class] = true
		if f.Cycle > 0 {
			if perCycle[f.Cycle-1] == nil {
				perCycle[f.Cycle-1] = map[string]bool{}
			}
			perCycle[f.Cycle-1][f.Class] = true
		}
	}
	for i, m := range perCycle {
		for _, c := range Classes {
			if m[c] {
				r.CycleObserved[i] = append(r.CycleObserved[i], c)
			}
		}
		if m[ClassOverlap] || m[ClassFenced] {
			r.Stats.CyclesOverlap++
		}
	}
	for _, c := range Classes {
		if seen[c] {
			r.Observed = append(r.Observed, c)
		}
	}
	r.Verdict = ClassSafe
	if len(r.Observed) > 0 {
		r.Verdict = r.Observed[0]
	}
	return r
}

// Holds reconstructs every grant from the history: from the acquire's ok to
// the first of release invocation, end of the reported validity (as moved by
// renewals), or the client's death.
func Holds(events []history.Event) []Hold {
	type open struct {
		h       Hold
		expires int64
	}
	var holds []Hold
	byLease := map[string]*open{}
	var order []string
	died := map[string][]int64{} // every death of each process, in time order (a restarted worker dies again)
	lastAccess := map[string]int64{}
	for _, e := range events {
		switch {
		case e.Kind == history.OK && e.Op == history.OpAcquire && e.Lease != "":
			byLease[e.Lease] = &open{h: Hold{Process: e.Process, Lease: e.Lease, Fence: e.Fence, Start: e.Time, ValidUntil: e.ValidUntil}, expires: e.ValidUntil}
			order = append(order, e.Lease)
		case e.Kind == history.Renew:
			if o := byLease[e.Lease]; o != nil && o.h.End == 0 {
				// A renewal only counts if it came before the lease lapsed.
				if o.expires == 0 || e.Time <= o.expires {
					o.expires = e.ValidUntil
					o.h.ValidUntil = e.ValidUntil
				}
			}
		case e.Kind == history.OK && e.Op == history.OpExtend:
			if o := byLease[e.Lease]; o != nil && (o.expires == 0 || e.Time <= o.expires) {
				o.expires = e.ValidUntil
				o.h.ValidUntil = e.ValidUntil
			}
		case e.Kind == history.Invoke && e.Op == history.OpRelease:
			if o := byLease[e.Lease]; o != nil && o.h.End == 0 {
				o.h.End, o.h.EndReason = e.Time, "release"
			}
		case e.Kind == history.Access:
			if e.Lease != "" {
				lastAccess[e.Lease] = e.Time
			}
		case e.Kind == history.Note && e.Op == "crashed":
			died[e.Process] = append(died[e.Process], e.Time)
		}
	}
	var runEnd int64
	if len(events) > 0 {
		runEnd = events[len(events)-1].Time
	}
	for _, id := range order {
		o := byLease[id]
		h := o.h
		if h.End == 0 {
			h.End, h.EndReason = runEnd, "run-end"
		}
		for _, d := range died[h.Process] {
			if d > h.Start {
				if d < h.End {
					h.End, h.EndReason = d, "crashed"
				}
				break
			}
		}
		if o.expires != 0 && o.expires < h.End {
			h.End, h.EndReason = o.expires, "expired"
		}
		h.LastAccess = lastAccess[id]
		holds = append(holds, h)
	}
	return holds
}

// Faults pairs fault starts with their ends. Several faults of one kind can
// be active on one target at once (latency on n1 for c2, then for c3, ...);
// the nemesis heals the newest first, so an end closes the most recent open
// start of its kind and target.
func Faults(events []history.Event) []Window {
	var out []Window
	open := map[string][]int{}
	key := func(e history.Event) string { return e.Fault + "@" + e.Target }
	for _, e := range events {
		switch e.Kind {
		case history.FaultStart:
			open[key(e)] = append(open[key(e)], len(out))
			out = append(out, Window{Fault: e.Fault, Target: e.Target, Start: e.Time, Cycle: e.Cycle})
		case history.FaultEnd:
			if st := open[key(e)]; len(st) > 0 {
				out[st[len(st)-1]].End = e.Time
				open[key(e)] = st[:len(st)-1]
			}
		}
	}
	return out
}

func faultsAround(ws []Window, from, to int64) []string {
	var out []string
	seen := map[string]bool{}
	for _, w := range ws {
		end := w.End
		if end == 0 {
			end = 1<<63 - 1
		}
		// Active during the finding, or began within the 30 s before it.
		if w.Start <= to && end >= from-int64(30*time.Second) {
			s := w.Fault
			if w.Target != "" {
				s += "(" + w.Target + ")"
			}
			if !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	return out
}

func cycleStarts(events []history.Event) []int64 {
	var out []int64
	for _, e := range events {
		if e.Kind == history.Note && e.Op == "cycle" {
			out = append(out, e.Time)
		}
	}
	return out
}

func cycleOf(starts []int64, t int64) int {
	c := 0
	for i, s := range starts {
		if t >= s {
			c = i + 1
		}
	}
	return c
}

func stats(events []history.Event, holds []Hold) Stats {
	var s Stats
	inv := map[int64]int64{}
	for _, e := range events {
		switch {
		case e.Kind == history.Invoke && e.Op == history.OpAcquire:
			s.Acquires++
			inv[e.OpID] = e.Time
		case e.Op == history.OpAcquire && e.Kind == history.OK:
			s.Grants++
			if t, ok := inv[e.OpID]; ok {
				s.AcquireLatency = append(s.AcquireLatency, e.Time-t)
			}
		case e.Op == history.OpAcquire && e.Kind == history.Fail:
			s.Fails++
		case e.Op == history.OpAcquire && e.Kind == history.Info:
			s.Unknown++
		case e.Op == history.OpCS && e.Kind == history.OK:
			s.CriticalSecs++
		case e.Kind == history.Access:
			if e.Rejected {
				s.Rejected++
			} else if e.Access == "write" && e.Value != nil {
				s.FinalValue = *e.Value
			}
		}
	}
	if n := len(s.AcquireLatency); n > 0 {
		var sum int64
		for _, v := range s.AcquireLatency {
			sum += v
		}
		s.MeanAcquireNs = sum / int64(n)
		sorted := append([]int64(nil), s.AcquireLatency...)
		sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
		s.P99AcquireNs = sorted[(n*99)/100]
	}
	return s
}
