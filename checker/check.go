package checker

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/lockfault/lockfault/history"
)

// Options tune a check.
type Options struct {
	// StuckAfter: a stretch longer than this with no holder while clients
	// kept trying is a liveness failure. Zero disables the check.
	StuckAfter time.Duration
	// LinearizabilityTimeout bounds the whole corruption check (every
	// porcupine run together; 0: 30 s). When it runs out the result is
	// unknown, never linearizable.
	LinearizabilityTimeout time.Duration
	// Evidence, when set, is what the run must show per cycle for a
	// cycle without findings to count (else the finding unknown: the
	// cycle proved nothing), and turns on the finding died (a worker that
	// died without the schedule killing it).
	Evidence *Evidence
}

// DefaultLinearizabilityTimeout is used when Options leave it zero.
const DefaultLinearizabilityTimeout = 30 * time.Second

// input is what every pass sees: the time-ordered history, the holds, and
// the key of every event.
type input struct {
	events []history.Event
	opt    Options
	res    *Result               // passes may set fields of the result (Linearizable, Segments)
	holds  []Hold                // ordered by Start
	hold   map[string]int        // lease -> index in holds
	byKey  map[string][]int      // hold indices per key, ordered by Start
	keys   []string              // every key seen, sorted
	evKeys []string              // the key of each event
	gaps   map[string][][2]int64 // per key, the stretches in which clients tried and nobody held (liveness.go; computed once)

	// work counts the steps of the check (events visited, pairs compared):
	// every pass and phase counts its loops with in.work.add, so that
	// TestCheckWorkGrowsLinearly finds a pass whose work grows faster than
	// its history. workBy, when set (only by that test), receives each
	// phase's count under its name.
	work   work
	workBy map[string]int64
}

// work is a step counter (the complexity guard's measure; never a time).
type work struct{ n int64 }

func (w *work) add(k int) {
	if w != nil {
		w.n += int64(k)
	}
}

// phase runs f and charges the work it counted to name.
func (in *input) phase(name string, f func()) {
	before := in.work.n
	f()
	if in.workBy != nil {
		in.workBy[name] += in.work.n - before
	}
}

// A pass finds one class (or a few related classes) of findings.
type pass struct {
	name string
	run  func(*input) []Finding
}

// passes run in this order; a new class of finding is one new file with its
// pass function plus one line here.
var passes = []pass{
	{"overlap", overlapPass},
	{"fence-inversion", fenceInversionPass},
	{"stale-extend", staleExtendPass},
	{"corruption", corruptionPass},
	{"stuck", stuckPass},
	{"unknown", unknownPass},
	{"not-exercised", func(in *input) []Finding { return notExercised(in.events, &in.work) }},
	{"unavailable", func(in *input) []Finding { in.work.add(len(in.events)); return Unavailable(in.events) }},
}

// Check runs every pass over a history. events are ordered by time in place
// when they are not already (history.Read returns them ordered). A history
// that cannot be judged (empty, malformed, no grant, no completed
// operation, or porcupine ran out of time) has the class unknown with the
// reason in Result.Reason: it is never safe.
func Check(events []history.Event, opt Options) *Result { return check(events, opt, nil) }

// check is Check, charging each phase's work to workBy when it is set.
func check(events []history.Event, opt Options, workBy map[string]int64) *Result {
	history.SortByTime(events)
	r := &Result{Linearizable: "Ok"}
	for i := range events {
		if err := history.Validate(&events[i]); err != nil {
			r.Findings = []Finding{{Class: ClassUnknown, From: events[i].Time, To: events[i].Time,
				Detail: fmt.Sprintf("event seq %d: %v", events[i].Seq, err)}}
			r.Linearizable = "Unknown"
			finish(r, nil)
			return r
		}
	}
	in := &input{events: events, opt: opt, res: r, workBy: workBy}
	w := &in.work
	var cycles []int64
	in.phase("holds", func() { in.holds = holds(events, w) })
	in.phase("index", in.index)
	r.Holds = in.holds
	in.phase("faults", func() { r.Faults = faults(events, w) })
	in.phase("stalls", func() { r.Stalls = stalls(events, r.Faults, w) })
	in.phase("cycles", func() { cycles = cycleStarts(events, w) })
	in.phase("stats", func() { r.Stats = stats(events, r.Holds, w) })
	r.Stats.Cycles = len(cycles)
	r.Keys = in.keys
	in.phase("gaps", func() { in.gaps = gaps(in) })

	var findings []Finding
	for _, p := range passes {
		in.phase(p.name, func() { findings = append(findings, p.run(in)...) })
	}
	if opt.Evidence != nil {
		in.phase("evidence", func() {
			ef, sum := evidencePass(in, findings)
			findings = append(findings, ef...)
			r.Evidence = &sum
		})
	}
	in.phase("max-unavailable", func() { r.Stats.MaxUnavailable = maxUnavailable(in) })
	in.phase("penalties", func() { r.Stats.PenaltyNs = penalties(r.Faults, r.Holds, w) })
	in.phase("findings", func() {
		around := newFaultIndex(r.Faults, w)
		for i := range findings {
			f := &findings[i]
			f.Faults = around.around(f.From, f.To)
			f.Cycle = cycleOf(cycles, f.From)
			w.add(1)
		}
		sort.SliceStable(findings, func(i, j int) bool { return findings[i].From < findings[j].From })
		w.add(len(findings))
		r.Findings = findings
		finish(r, cycles)
	})
	return r
}

// finish derives the observed classes, the per-cycle classes, the verdict
// and the reason of an unknown from the findings.
func finish(r *Result, cycles []int64) {
	seen := map[string]bool{}
	r.CycleObserved = make([][]string, len(cycles))
	perCycle := make([]map[string]bool, len(cycles))
	var why []string
	for _, f := range r.Findings {
		seen[f.Class] = true
		if f.Class == ClassUnknown {
			why = append(why, f.Detail)
		}
		first, last := f.Cycle, f.Cycle
		if f.Cycle == 0 && len(cycles) > 0 {
			// A finding about the run as a whole (it began before the
			// first cycle: "the lock granted nothing") is in every cycle
			// it spans, so the rates agree with it.
			first, last = 1, cycleOf(cycles, f.To)
		}
		for c := max(first, 1); c <= min(last, len(perCycle)); c++ {
			if perCycle[c-1] == nil {
				perCycle[c-1] = map[string]bool{}
			}
			perCycle[c-1][f.Class] = true
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
	if len(why) > 0 {
		if len(why) > 3 {
			why = append(why[:3], fmt.Sprintf("and %d more", len(why)-3))
		}
		r.Reason = strings.Join(why, "; ")
	}
}

// index assigns every event and hold its key and groups holds per key.
func (in *input) index() {
	in.hold = make(map[string]int, len(in.holds))
	in.byKey = map[string][]int{}
	in.work.add(len(in.holds) + len(in.events))
	for i, h := range in.holds {
		in.hold[h.Lease] = i
		in.byKey[h.Key] = append(in.byKey[h.Key], i)
	}
	in.evKeys = make([]string, len(in.events))
	seen := map[string]bool{}
	for k := range in.byKey {
		seen[k] = true
	}
	for i := range in.events {
		e := &in.events[i]
		k := e.Key
		if k == "" && e.Lease != "" {
			if h, ok := in.hold[e.Lease]; ok {
				k = in.holds[h].Key
			}
		}
		in.evKeys[i] = k
		if e.Kind == history.Access || (e.Op == history.OpAcquire) {
			seen[k] = true
		}
	}
	for k := range seen {
		in.keys = append(in.keys, k)
	}
	sort.Strings(in.keys)
}

// unknownPass: a history too short to judge is not safe.
func unknownPass(in *input) []Finding {
	in.work.add(len(in.events))
	var completed, grants int
	var first, last int64
	if len(in.events) > 0 {
		first, last = in.events[0].Time, in.events[len(in.events)-1].Time
	}
	for _, e := range in.events {
		switch e.Kind {
		case history.OK, history.Fail:
			completed++
			if e.Kind == history.OK && e.Op == history.OpAcquire {
				grants++
			}
		}
	}
	var why string
	switch {
	case len(in.events) == 0:
		why = "the history is empty: nothing to judge"
	case completed == 0:
		why = fmt.Sprintf("no client operation completed in %d events: nothing to judge", len(in.events))
	case grants == 0:
		why = "the lock granted nothing: mutual exclusion was never exercised"
	default:
		return nil
	}
	return []Finding{{Class: ClassUnknown, From: first, To: last, Detail: why}}
}

// Holds reconstructs every grant from the history: from the acquire's ok to
// the first of release invocation, end of the reported validity (as moved by
// renewals), or the client's death. Holds are ordered by start and carry
// their key. An extend or renewal that succeeded after the lease lapsed
// moves KeptUntil, not End (see Hold).
func Holds(events []history.Event) []Hold { return holds(events, nil) }

func holds(events []history.Event, w *work) []Hold {
	w.add(len(events))
	type open struct {
		h       Hold
		expires int64
		kept    int64 // the latest validity an extend or renewal reported, lapsed or not
	}
	var holds []Hold
	byLease := map[string]*open{}
	var order []string
	died := map[string][]int64{} // every death of each process, in time order (a restarted worker dies again)
	type accesses struct{ first, last, lastAccepted int64 }
	acc := map[string]*accesses{}
	for _, e := range events {
		switch {
		case e.Kind == history.OK && e.Op == history.OpAcquire && e.Lease != "":
			if _, dup := byLease[e.Lease]; !dup {
				order = append(order, e.Lease)
			}
			byLease[e.Lease] = &open{h: Hold{Process: e.Process, Lease: e.Lease, Key: e.Key, Fence: e.Fence, Start: e.Time, ValidUntil: e.ValidUntil}, expires: e.ValidUntil}
		case e.Kind == history.Renew:
			if o := byLease[e.Lease]; o != nil && o.h.End == 0 {
				o.kept = max(o.kept, e.ValidUntil)
				// A renewal only counts if it came before the lease lapsed.
				if o.expires == 0 || e.Time <= o.expires {
					o.expires = e.ValidUntil
					o.h.ValidUntil = e.ValidUntil
				}
			}
		case e.Kind == history.OK && e.Op == history.OpExtend:
			if o := byLease[e.Lease]; o != nil {
				if o.h.End == 0 {
					o.kept = max(o.kept, e.ValidUntil)
				}
				if o.expires == 0 || e.Time <= o.expires {
					o.expires = e.ValidUntil
					o.h.ValidUntil = e.ValidUntil
				}
			}
		case e.Kind == history.Invoke && e.Op == history.OpRelease:
			if o := byLease[e.Lease]; o != nil && o.h.End == 0 {
				o.h.End, o.h.EndReason = e.Time, "release"
			}
		case e.Kind == history.Access:
			if e.Lease != "" {
				a := acc[e.Lease]
				if a == nil {
					a = &accesses{first: e.Time}
					acc[e.Lease] = a
				}
				a.last = e.Time
				if !e.Rejected {
					a.lastAccepted = e.Time
				}
			}
		case e.Kind == history.Note && e.Op == "crashed":
			died[e.Process] = append(died[e.Process], e.Time)
		}
	}
	var runEnd int64
	if len(events) > 0 {
		runEnd = events[len(events)-1].Time
	}
	holds = make([]Hold, 0, len(order))
	w.add(len(order))
	for _, id := range order {
		o := byLease[id]
		h := o.h
		endHold(&h, runEnd, died[h.Process], o.expires, o.kept)
		if a := acc[id]; a != nil {
			h.FirstAccess, h.LastAccess, h.LastAccepted = a.first, a.last, a.lastAccepted
		}
		holds = append(holds, h)
	}
	sort.SliceStable(holds, func(i, j int) bool { return holds[i].Start < holds[j].Start })
	return holds
}

// endHold ends a hold: at its release (or the run's end), the client's
// first death after its start, or the end of its validity, whichever came
// first; and keeps it (KeptUntil) until the latest validity an extend or
// renewal reported, when that is later and the client had neither
// released nor died.
func endHold(h *Hold, runEnd int64, deaths []int64, expires, kept int64) {
	if h.End == 0 {
		h.End, h.EndReason = runEnd, "run-end"
	}
	if i := sort.Search(len(deaths), func(i int) bool { return deaths[i] > h.Start }); i < len(deaths) && deaths[i] < h.End {
		h.End, h.EndReason = deaths[i], "crashed"
	}
	end := h.End
	if expires != 0 && expires < h.End {
		h.End, h.EndReason = expires, "expired"
	}
	if k := min(kept, end); k > h.End {
		h.KeptUntil = k
	}
}

// Faults pairs fault starts with their ends. Several faults of one kind can
// be active on one target at once (latency on n1 for c2, then for c3, ...);
// the nemesis heals the newest first, so an end closes the most recent open
// start of its kind and target.
func Faults(events []history.Event) []Window { return faults(events, nil) }

func faults(events []history.Event, w *work) []Window {
	w.add(len(events))
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

// faultIndex answers which faults were around a finding: active during
// it, or begun within the 30 s before it. Per fault and target (a label),
// the windows in start order and the latest end among each prefix of
// them, so a finding costs a binary search per label, not a walk over
// every fault.
type faultIndex struct {
	labels []string
	byLbl  map[string]*labelWindows
	w      *work
}

type labelWindows struct {
	idx    []int   // indices in the run's fault list, ordered by start
	start  []int64 // their starts
	maxEnd []int64 // maxEnd[i]: the latest end among the first i+1 (open: +inf)
}

// faultLookback: a fault begun this long before a finding is still named
// beside it.
const faultLookback = int64(30 * time.Second)

func newFaultIndex(ws []Window, w *work) *faultIndex {
	fi := &faultIndex{byLbl: map[string]*labelWindows{}, w: w}
	order := make([]int, len(ws))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return ws[order[a]].Start < ws[order[b]].Start })
	w.add(len(ws))
	for _, i := range order {
		win := ws[i]
		s := win.Fault
		if win.Target != "" {
			s += "(" + win.Target + ")"
		}
		l := fi.byLbl[s]
		if l == nil {
			l = &labelWindows{}
			fi.byLbl[s] = l
			fi.labels = append(fi.labels, s)
		}
		end := win.End
		if end == 0 {
			end = 1<<63 - 1
		}
		if n := len(l.maxEnd); n > 0 {
			end = max(end, l.maxEnd[n-1])
		}
		l.idx, l.start, l.maxEnd = append(l.idx, i), append(l.start, win.Start), append(l.maxEnd, end)
	}
	return fi
}

// around names, once each and in the order of the run's fault list, the
// faults active during [from, to] or begun within faultLookback before it.
func (fi *faultIndex) around(from, to int64) []string {
	type hit struct {
		at    int
		label string
	}
	var hits []hit
	for _, s := range fi.labels {
		l := fi.byLbl[s]
		fi.w.add(1)
		n := sort.Search(len(l.start), func(i int) bool { return l.start[i] > to }) // windows that began by to
		j := sort.Search(n, func(i int) bool { return l.maxEnd[i] >= from-faultLookback })
		if j < n {
			// The first window of the label that qualifies: maxEnd first
			// reaches the bound at a window whose own end does.
			hits = append(hits, hit{l.idx[j], s})
		}
	}
	sort.Slice(hits, func(a, b int) bool { return hits[a].at < hits[b].at })
	var out []string // nil when no fault was around
	for _, h := range hits {
		out = append(out, h.label)
	}
	return out
}

func cycleStarts(events []history.Event, w *work) []int64 {
	w.add(len(events))
	var out []int64
	for _, e := range events {
		if e.Kind == history.Note && e.Op == "cycle" {
			out = append(out, e.Time)
		}
	}
	return out
}

// cycleOf numbers the cycle an instant falls in (0: before the first).
func cycleOf(starts []int64, t int64) int {
	return sort.Search(len(starts), func(i int) bool { return starts[i] > t })
}

func stats(events []history.Event, holds []Hold, w *work) Stats {
	w.add(len(events))
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
				delete(inv, e.OpID)
			}
		case e.Op == history.OpAcquire && e.Kind == history.Fail:
			s.Fails++
			delete(inv, e.OpID)
		case e.Op == history.OpAcquire && e.Kind == history.Info:
			s.Unknown++
			delete(inv, e.OpID)
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

// Unjudged is the result of a history that could not be read whole (a
// gap, a torn line, an impossible sequence, an I/O error): unknown, with
// the reason. It is never safe.
func Unjudged(reason string) *Result {
	r := &Result{Linearizable: "Unknown", Findings: []Finding{{Class: ClassUnknown, Detail: reason}}}
	finish(r, nil)
	return r
}
