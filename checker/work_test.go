package checker

import (
	"fmt"
	"math/rand"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/lockfault/lockfault/history"
)

// The complexity guard: the checker's work, counted in steps by every pass
// and phase (work.add), may grow at most about linearly with the history.
// It counts work, never time, so it holds on any machine under any load.
//
// workHistory(n) has n critical sections and everything else in
// proportion: contended acquires that wait out other holds, failed tries,
// extends, renewals, rejected accesses, cycles, faults, failpoints that
// fire, path-slow notes, stuck stretches and lost updates (findings). A
// pass whose work grows with the product of two of these (holds × tries,
// findings × faults, cycles × events, ...) grows about 16× from n to 4n;
// a linear one 4×, an n log n one a little more.

const maxGrowth = 5.0 // from n to 4n

func workHistory(n int) []history.Event {
	const ms = int64(time.Millisecond)
	rng := rand.New(rand.NewSource(int64(n)))
	var evs []history.Event
	op, seq := int64(0), int64(0)
	add := func(e history.Event) {
		seq++
		e.Seq = seq
		evs = append(evs, e)
	}
	val := map[string]int64{}
	t := int64(1e9)
	for i := 0; i < n; i++ {
		k := []string{"a", "b"}[i%2]
		p := fmt.Sprintf("c%d", 1+i%3)
		q := fmt.Sprintf("c%d", 1+(i+1)%3)
		lease := fmt.Sprintf("%s-%d", p, i)
		if i%10 == 0 {
			add(history.Event{Time: t, Kind: history.Note, Op: "cycle", Cycle: i/10 + 1})
			add(history.Event{Time: t + 1, Kind: history.FaultStart, Fault: "partition", Target: fmt.Sprintf("n%d", 1+i%3), Detail: "node"})
			add(history.Event{Time: t + 2, Kind: history.FaultStart, Fault: "failpoint", Target: p, Detail: "name=before-write"})
			add(history.Event{Time: t + 3, Kind: history.FaultStart, Fault: "clock-client", Target: q, Detail: "fault clock-client on " + q})
			add(history.Event{Time: t + 4, Kind: history.Note, Op: NoteClockUnseen, Process: q, Detail: "its wall clock did not move"})
		}
		if i%50 == 25 {
			// A stuck stretch: q keeps trying for 3 s while nobody holds.
			for j := int64(0); j < 4; j++ {
				op++
				add(history.Event{Time: t + j*800*ms, Kind: history.Invoke, Process: q, Op: history.OpAcquire, OpID: op, Key: k})
				add(history.Event{Time: t + j*800*ms + 700*ms, Kind: history.Fail, Process: q, Op: history.OpAcquire, OpID: op, Key: k})
			}
			t += 3200 * ms
		}
		// q waits for the key while p holds it, and gives up after p's release.
		op++
		qop := op
		add(history.Event{Time: t, Kind: history.Invoke, Process: q, Op: history.OpAcquire, OpID: qop, Key: k})
		op++
		add(history.Event{Time: t + ms/2, Kind: history.Invoke, Process: p, Op: history.OpAcquire, OpID: op, Key: k})
		add(history.Event{Time: t + ms, Kind: history.OK, Process: p, Op: history.OpAcquire, OpID: op, Key: k, Lease: lease, ValidUntil: t + 100*ms, Fence: int64(i + 1)})
		if i%5 == 0 {
			add(history.Event{Time: t + ms + ms/2, Kind: history.Renew, Process: p, Lease: lease, Key: k, ValidUntil: t + 200*ms})
		}
		op++
		v := val[k]
		add(history.Event{Time: t + 2*ms - 100, Kind: history.Invoke, Process: p, Op: history.OpCS, OpID: op, Key: k, Lease: lease})
		add(history.Event{Time: t + 2*ms, Kind: history.Access, Process: p, Lease: lease, Key: k, Access: "read", Value: history.Int64(v)})
		if i%10 == 0 {
			add(history.Event{Time: t + 2*ms + 50, Kind: history.Note, Op: NoteFired, Process: p, Detail: "before-write fired"})
		}
		writeAt := t + 3*ms
		lost := i%50 == 40
		if lost {
			writeAt = t + 150*ms // past its lease, after the next section read
		}
		add(history.Event{Time: writeAt, Kind: history.Access, Process: p, Lease: lease, Key: k, Access: "write", Value: history.Int64(v + 1)})
		add(history.Event{Time: writeAt + 100, Kind: history.OK, Process: p, Op: history.OpCS, OpID: op, Key: k, Lease: lease, Read: history.Int64(v), Wrote: history.Int64(v + 1)})
		if !lost {
			val[k] = v + 1
		}
		if i%4 == 0 {
			op++
			add(history.Event{Time: t + 3*ms + 200, Kind: history.Invoke, Process: p, Op: history.OpExtend, OpID: op, Key: k, Lease: lease})
			add(history.Event{Time: t + 3*ms + 300, Kind: history.OK, Process: p, Op: history.OpExtend, OpID: op, Key: k, Lease: lease, ValidUntil: t + 100*ms})
		}
		if i%7 == 0 {
			add(history.Event{Time: t + 3*ms + 400, Kind: history.Access, Process: q, Lease: fmt.Sprintf("%s-stale-%d", q, i), Key: k, Access: "write", Rejected: true})
		}
		op++
		add(history.Event{Time: t + 4*ms, Kind: history.Invoke, Process: p, Op: history.OpRelease, OpID: op, Key: k, Lease: lease})
		add(history.Event{Time: t + 4*ms + 100, Kind: history.OK, Process: p, Op: history.OpRelease, OpID: op, Key: k, Lease: lease})
		add(history.Event{Time: t + 4*ms + 200, Kind: history.Fail, Process: q, Op: history.OpAcquire, OpID: qop, Key: k})
		if i%10 == 9 {
			add(history.Event{Time: t + 5*ms, Kind: history.FaultEnd, Fault: "failpoint", Target: fmt.Sprintf("c%d", 1+(i-9)%3)})
			add(history.Event{Time: t + 5*ms + 1, Kind: history.FaultEnd, Fault: "partition", Target: fmt.Sprintf("n%d", 1+(i-9)%3)})
			add(history.Event{Time: t + 5*ms + 2, Kind: history.FaultEnd, Fault: "clock-client", Target: fmt.Sprintf("c%d", 1+(i-9+1)%3)})
			add(history.Event{Time: t + 6*ms, Kind: history.Note, Op: history.NotePathSlow, Target: "n1", DurationMs: 2})
		}
		t += int64(5+rng.Intn(3)) * ms
	}
	history.SortByTime(evs)
	return evs
}

// countWork checks events and returns each phase's work.
func countWork(events []history.Event) map[string]int64 {
	by := map[string]int64{}
	ev := DefaultEvidence
	check(events, Options{StuckAfter: 2 * time.Second, Evidence: &ev}, by)
	return by
}

// TestCheckWorkGrowsLinearly is the guard: for every phase of a check, the
// work on a history four times longer is at most maxGrowth times the work
// on the shorter one, and every pass counts its work (a pass that counts
// nothing would escape the guard).
func TestCheckWorkGrowsLinearly(t *testing.T) {
	const n = 2000
	small, large := workHistory(n), workHistory(4*n)
	// The history exercises what the guard needs to see.
	r := Check(append([]history.Event(nil), large...), Options{StuckAfter: 2 * time.Second, Evidence: &DefaultEvidence})
	for _, c := range []string{ClassOverlap, ClassStuck} {
		if !containsClass(r.Observed, c) {
			t.Fatalf("the guard's history shows no %s (observed %v): it would not exercise that pass's loops", c, r.Observed)
		}
	}
	if len(r.Faults) < n/10 || len(r.Stalls) < n/20 || r.Stats.Cycles < n/10 {
		t.Fatalf("the guard's history has %d faults, %d stalls, %d cycles: too few to scale", len(r.Faults), len(r.Stalls), r.Stats.Cycles)
	}
	ws, wl := countWork(small), countWork(large)
	for _, p := range passes {
		if ws[p.name] == 0 {
			t.Errorf("pass %s counted no work: count its loops with in.work.add (checker/check.go), or this guard cannot see it", p.name)
		}
	}
	var names []string
	for name := range wl {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if g, ok := growth(ws[name], wl[name]); !ok {
			t.Errorf("phase %s: work %d on %d sections, %d on %d: %.1f× for 4× the history (allowed ≤ %.0f×): a pass that pairs two sequences instead of sweeping them",
				name, ws[name], n, wl[name], 4*n, g, maxGrowth)
		} else {
			t.Logf("phase %-16s %9d → %9d steps (%.2f×)", name, ws[name], wl[name], g)
		}
	}
}

// growth is the guard's rule: large/small at most maxGrowth.
func growth(small, large int64) (float64, bool) {
	if small == 0 {
		return 0, large == 0
	}
	g := float64(large) / float64(small)
	return g, g <= maxGrowth
}

// TestGuardCatchesAQuadraticPass: the guard fails on the gaps pass as it
// was before it became one sweep (quadraticGaps, kept below: for every
// free stretch, every acquire call of its key), and passes on today's.
func TestGuardCatchesAQuadraticPass(t *testing.T) {
	const n = 2000
	count := func(f func(*input) map[string][][2]int64, evs []history.Event) int64 {
		in := &input{events: evs}
		in.holds = holds(evs, nil)
		in.index()
		in.work = work{}
		f(in)
		return in.work.n
	}
	small, large := workHistory(n), workHistory(4*n)
	if g, ok := growth(count(quadraticGaps, small), count(quadraticGaps, large)); ok {
		t.Fatalf("the guard passed the quadratic gaps (%.1f×): it cannot fail", g)
	} else {
		t.Logf("quadratic gaps: %.1f× (refused)", g)
	}
	if g, ok := growth(count(gaps, small), count(gaps, large)); !ok {
		t.Fatalf("the guard refused today's gaps (%.1f×)", g)
	}
}

// The earlier implementations, kept as references: the faster ones must
// give the same answers on every history.

// quadraticGaps is gaps as it was until 2026-11-28.
func quadraticGaps(in *input) map[string][][2]int64 {
	acts := acquireActivity(in) // unchanged since: today's first pass
	out := map[string][][2]int64{}
	for k, a := range acts {
		type iv struct{ a, b int64 }
		var free []iv
		cur := a.first
		for _, hi := range in.byKey[k] {
			h := in.holds[hi]
			if h.End <= cur {
				continue
			}
			if h.Start > cur {
				free = append(free, iv{cur, min(h.Start, a.last)})
			}
			cur = max(cur, h.End)
			if cur >= a.last {
				break
			}
		}
		if cur < a.last {
			free = append(free, iv{cur, a.last})
		}
		for _, f := range free {
			var parts [][2]int64
			for _, t := range a.tries {
				in.work.add(1)
				if t[0] >= f.b || t[1] <= f.a {
					continue
				}
				p := [2]int64{max(t[0], f.a), min(t[1], f.b)}
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

// refFaultsAround is faultsAround as it was: every fault for every finding.
func refFaultsAround(ws []Window, from, to int64) []string {
	var out []string
	seen := map[string]bool{}
	for _, w := range ws {
		end := w.End
		if end == 0 {
			end = 1<<63 - 1
		}
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

// refCutOut is cutOut as it was: every fault against every part.
func refCutOut(w Window, faults []Window) []Window {
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

// refNotExercised is NotExercised as it was: a walk to each failpoint's end.
func refNotExercised(events []history.Event) []Finding {
	var out []Finding
	var runEnd int64
	if len(events) > 0 {
		runEnd = events[len(events)-1].Time
	}
	fired := func(events []history.Event, name string, until int64) bool {
		for _, x := range events {
			if x.Time > until {
				return false
			}
			switch {
			case x.Kind == history.Note && x.Op == NoteFired && (name == "" || strings.HasPrefix(x.Detail+" ", name+" ")):
				return true
			case x.Kind == history.FaultStart && x.Fault == "failpoint-stop" && (name == "" || x.Detail == name):
				return true
			case x.Kind == history.Note && x.Op == "crashed":
				return true
			}
		}
		return false
	}
	for i, e := range events {
		switch {
		case e.Kind == history.Note && e.Op == NoteNotExercised:
			out = append(out, Finding{Class: ClassNotExercised, Clients: nonEmpty(e.Process), From: e.Time, To: e.Time,
				Detail: "not exercised: " + e.Detail})
		case e.Kind == history.FaultStart && e.Fault == "failpoint":
			name := paramOf(e.Detail, "name")
			end := runEnd
			for _, x := range events[i+1:] {
				if x.Kind == history.FaultEnd && x.Fault == e.Fault && x.Target == e.Target {
					end = x.Time
					break
				}
			}
			if !fired(events[i+1:], name, end+firedSlack) {
				out = append(out, Finding{Class: ClassNotExercised, From: e.Time, To: end,
					Detail: fmt.Sprintf("failpoint %s armed on %s for %v never fired: the lock never reached it, so this fault attacked nothing",
						name, e.Target, time.Duration(end-e.Time).Round(time.Millisecond))})
			}
		}
	}
	return out
}

// randomWindows draws windows on a small grid so that they touch, nest,
// repeat and have zero length; some are open (End 0).
func randomWindows(rng *rand.Rand, n int) []Window {
	var ws []Window
	for i := 0; i < n; i++ {
		s := int64(rng.Intn(40))
		e := s + int64(rng.Intn(8))
		if rng.Intn(10) == 0 {
			e = 0
		}
		ws = append(ws, Window{Fault: []string{"kill", "pause", "partition"}[rng.Intn(3)], Target: []string{"", "n1", "n2"}[rng.Intn(3)], Start: s, End: e})
	}
	sort.SliceStable(ws, func(i, j int) bool { return ws[i].Start < ws[j].Start })
	return ws
}

func TestFasterPassesEqualTheirReferences(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for round := 0; round < 3000; round++ {
		ws := randomWindows(rng, rng.Intn(12))
		fi := newFaultIndex(scaled(ws), nil)
		cover := union(ws, nil)
		for q := 0; q < 5; q++ {
			from := int64(rng.Intn(50)) - 5
			to := from + int64(rng.Intn(10))
			if got, want := fi.around(from*int64(time.Second), to*int64(time.Second)), refFaultsAround(scaled(ws), from*int64(time.Second), to*int64(time.Second)); !reflect.DeepEqual(got, want) {
				t.Fatalf("round %d: faults around [%d,%d] of %+v: %v, want %v", round, from, to, ws, got, want)
			}
			w := Window{Fault: "path-slow", Start: from, End: from + 1 + int64(rng.Intn(10))}
			if got, want := cutOut(w, cover, nil), refCutOut(w, ws); !reflect.DeepEqual(got, want) {
				t.Fatalf("round %d: %+v cut by %+v: %+v, want %+v", round, w, ws, got, want)
			}
		}
	}
	// gaps and the failpoint findings on generated histories, legal and not.
	for seed := int64(0); seed < 40; seed++ {
		var evs []history.Event
		if seed%2 == 0 {
			evs = workHistory(50 + int(seed))
		} else {
			evs = genHistory(seed, []string{"a", "b"}, 60, false, injStuck).ev
			history.SortByTime(evs)
		}
		in := &input{events: evs}
		in.holds = holds(evs, nil)
		in.index()
		if got, want := gaps(in), quadraticGaps(in); !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d: gaps differ from the reference:\n%v\n%v", seed, got, want)
		}
		// The clock steps' findings come first, as they did (not rewritten).
		want := append(clockUnseen(evs, evs[len(evs)-1].Time, nil), refNotExercised(evs)...)
		if got := notExercised(evs, nil); !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d: failpoint findings differ from the reference:\n%v\n%v", seed, got, want)
		}
	}
}

// scaled turns the grid's seconds into the nanoseconds faultsAround's
// 30 s lookback is measured in (the index takes them the same way).
func scaled(ws []Window) []Window {
	out := append([]Window(nil), ws...)
	for i := range out {
		out[i].Start *= int64(time.Second)
		out[i].End *= int64(time.Second)
	}
	return out
}

func containsClass(cs []string, c string) bool {
	for _, x := range cs {
		if x == c {
			return true
		}
	}
	return false
}
