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

var keySets = [][]string{{""}, {"a"}, {"a", "b"}, {"k1", "k2", "k3"}}

// Random legal histories (sequential holds per key, keys side by side in
// time, fenced or not) are safe.
func TestPropertyLegalHistoriesAreSafe(t *testing.T) {
	for seed := int64(0); seed < 200; seed++ {
		keys := keySets[seed%int64(len(keySets))]
		fenced := seed%2 == 0
		g := genHistory(seed, keys, 20+int(seed%60), fenced, "")
		r := Check(g.ev, Options{StuckAfter: time.Second})
		if r.Verdict != ClassSafe || len(r.Findings) != 0 || r.Linearizable != "Ok" {
			t.Fatalf("seed %d keys %v fenced %v: verdict %s lin %s findings %+v", seed, keys, fenced, r.Verdict, r.Linearizable, r.Findings)
		}
	}
}

// One violation of each class injected into a random legal history is
// found, on the right key, with the right clients and interval, and
// nothing else is reported but what the violation implies.
func TestPropertyInjectedViolationIsFound(t *testing.T) {
	kinds := []string{injOverlap, injStale, injLostUpdate, injFenced, injInversion, injStuck}
	for _, kind := range kinds {
		for seed := int64(0); seed < 60; seed++ {
			keys := keySets[seed%int64(len(keySets))]
			fenced := seed%2 == 0 || kind == injFenced || kind == injInversion
			g := genHistory(seed, keys, 10+int(seed%40), fenced, kind)
			r := Check(g.ev, Options{StuckAfter: time.Second})
			w := g.want
			name := fmt.Sprintf("%s seed %d keys %v fenced %v", kind, seed, keys, fenced)
			var got *Finding
			for i := range r.Findings {
				f := &r.Findings[i]
				if f.Class == w.Class && f.Key == w.Key {
					got = f
					break
				}
			}
			if got == nil {
				t.Fatalf("%s: no %s finding on key %q; findings %+v", name, w.Class, w.Key, r.Findings)
			}
			if w.From >= 0 && (got.From != w.From || got.To != w.To) {
				t.Fatalf("%s: interval [%v,%v], want [%v,%v]", name, time.Duration(got.From), time.Duration(got.To), time.Duration(w.From), time.Duration(w.To))
			}
			if w.From < 0 && got.To-got.From < int64(1900*time.Millisecond) {
				t.Fatalf("%s: stuck for only %v", name, time.Duration(got.To-got.From))
			}
			if !reflect.DeepEqual(got.Clients, w.Clients) && w.Clients != nil {
				t.Fatalf("%s: clients %v, want %v", name, got.Clients, w.Clients)
			}
			if w.Leases != nil && !reflect.DeepEqual(got.Leases, w.Leases) {
				t.Fatalf("%s: leases %v, want %v", name, got.Leases, w.Leases)
			}
			if w.Kind != "" && got.Kind != w.Kind {
				t.Fatalf("%s: kind %s, want %s", name, got.Kind, w.Kind)
			}
			allowed := map[string]bool{w.Class: true}
			for _, c := range g.also {
				allowed[c] = true
			}
			for _, c := range r.Observed {
				if !allowed[c] {
					t.Fatalf("%s: also observed %s: %+v", name, c, r.Findings)
				}
			}
			for _, c := range g.also {
				if !classes(r)[c] {
					t.Fatalf("%s: %s not observed: %+v", name, c, r.Findings)
				}
			}
			for _, f := range r.Findings {
				if f.Key != w.Key {
					t.Fatalf("%s: a finding on key %q, the violation was on %q: %+v", name, f.Key, w.Key, f)
				}
			}
		}
	}
}

// The sweep finds exactly the overlaps the all-pairs comparison finds.
func TestPropertySweepEqualsAllPairs(t *testing.T) {
	for seed := int64(0); seed < 300; seed++ {
		rng := rand.New(rand.NewSource(seed))
		var holds []Hold
		for i := 0; i < 2+rng.Intn(60); i++ {
			s := int64(rng.Intn(1000))
			h := Hold{Process: fmt.Sprintf("c%d", rng.Intn(5)), Lease: fmt.Sprint(i), Key: []string{"", "x"}[rng.Intn(2)],
				Start: s, End: s + int64(1+rng.Intn(200))}
			if rng.Intn(4) == 0 {
				h.LastAccess = h.End + int64(rng.Intn(100))
			}
			holds = append(holds, h)
		}
		sort.SliceStable(holds, func(i, j int) bool { return holds[i].Start < holds[j].Start })
		type pair struct {
			a, b     string
			from, to int64
			kind     string
		}
		var want []pair
		for i := range holds {
			for j := i + 1; j < len(holds); j++ {
				a, b := holds[i], holds[j]
				if a.Process == b.Process || a.Key != b.Key {
					continue
				}
				from, to := max(a.Start, b.Start), min(a.EffectiveEnd(), b.EffectiveEnd())
				if from >= to {
					continue
				}
				kind := "both-valid"
				if from >= min(a.End, b.End) {
					kind = "stale-access"
				}
				want = append(want, pair{a.Lease, b.Lease, from, to, kind})
			}
		}
		var got []pair
		for _, f := range Overlaps(holds, nil) {
			got = append(got, pair{f.Leases[0], f.Leases[1], f.From, f.To, f.Kind})
		}
		less := func(ps []pair) func(i, j int) bool {
			return func(i, j int) bool { return fmt.Sprint(ps[i]) < fmt.Sprint(ps[j]) }
		}
		sort.Slice(want, less(want))
		sort.Slice(got, less(got))
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d: sweep %v\nall pairs %v", seed, got, want)
		}
	}
}

// Soundness gap: an empty history was "safe". It is unknown, with a reason.
func TestEmptyHistoryIsUnknown(t *testing.T) {
	for name, evs := range map[string][]history.Event{
		"empty":        nil,
		"no-outcome":   {{Time: 5, Kind: history.Invoke, Process: "c1", Op: history.OpAcquire, OpID: 1}},
		"no-grant":     {{Time: 5, Kind: history.Invoke, Process: "c1", Op: history.OpAcquire, OpID: 1}, {Time: 6, Kind: history.Fail, Process: "c1", Op: history.OpAcquire, OpID: 1}},
		"notes-only":   {{Time: 5, Kind: history.Note, Op: "setup"}},
		"faults-only":  {{Time: 5, Kind: history.FaultStart, Fault: "kill"}, {Time: 6, Kind: history.FaultEnd, Fault: "kill"}},
		"garbage-kind": {{Time: 5, Kind: "garbage"}},
	} {
		r := Check(evs, Options{})
		if r.Verdict != ClassUnknown || r.Reason == "" {
			t.Errorf("%s: verdict %s reason %q, want unknown with a reason", name, r.Verdict, r.Reason)
		}
		if ok, _ := Match(r.Observed, []string{ClassSafe}, nil); ok {
			t.Errorf("%s: matches an expectation of safe", name)
		}
	}
}

// Soundness gap: a write access without a value made the checker panic.
func TestWriteWithoutValueIsUnknownNotPanic(t *testing.T) {
	var h b
	h.grant("c1", "c1-1", 0, 1, 1000, 0)
	h.add(history.Event{Time: 2 * ms, Kind: history.Access, Process: "c1", Lease: "c1-1", Access: "read", Value: history.Int64(0)})
	h.add(history.Event{Seq: 7, Time: 3 * ms, Kind: history.Access, Process: "c1", Lease: "c1-1", Access: "write"})
	h.release("c1", "c1-1", 4)
	r := Check(h.ev, Options{})
	if r.Verdict != ClassUnknown || !containsAll(r.Reason, "seq 7", "value: missing") {
		t.Fatalf("verdict %s reason %q", r.Verdict, r.Reason)
	}
}

// Soundness gap: when a later grant carries a smaller token, the resource
// refuses the legitimate new holder and accepts the stale one; this was
// reported as "fenced" (a pass). It is a fence inversion, and the accepted
// stale write is an overlap.
func TestFenceInversionIsNotFenced(t *testing.T) {
	var h b
	h.grant("c1", "c1-1", 0, 1, 100, 40) // the earlier grant, larger token
	h.access("c1", "c1-1", "read", 2, 0, 40, false)
	h.grant("c2", "c2-1", 0, 150, 1150, 34) // the later grant, smaller token
	h.access("c2", "c2-1", "read", 151, 0, 34, true)
	h.access("c2", "c2-1", "write", 152, 0, 34, true)
	h.access("c1", "c1-1", "write", 300, 1, 40, false) // the stale write is accepted
	h.release("c2", "c2-1", 310)
	h.release("c1", "c1-1", 320)
	r := Check(h.ev, Options{})
	c := classes(r)
	if c[ClassFenced] || !c[ClassFenceInversion] || !c[ClassOverlap] || r.Verdict != ClassOverlap {
		t.Fatalf("observed %v findings %+v; want overlap and fence-inversion, not fenced", r.Observed, r.Findings)
	}
	for _, f := range r.Findings {
		if f.Class == ClassFenceInversion && (f.From != 151*ms || f.To != 152*ms || !reflect.DeepEqual(f.Clients, []string{"c2", "c1"})) {
			t.Fatalf("fence-inversion finding %+v", f)
		}
	}
	if ok, _ := Match(r.Observed, []string{ClassFenced}, nil); ok {
		t.Fatal("a fence inversion matches an expectation of fenced")
	}
}

// Soundness gap: Options.LinearizabilityTimeout was ignored (30 s hard
// coded). A check that runs out of time is unknown, never linearizable.
func TestLinearizabilityTimeoutIsHonoured(t *testing.T) {
	var h b
	h.grant("c1", "c1-1", 0, 1, 1000, 0)
	h.grant("c2", "c2-1", 0, 2, 1000, 0)
	h.access("c1", "c1-1", "read", 3, 0, 0, false)
	h.access("c2", "c2-1", "read", 4, 0, 0, false)
	h.access("c1", "c1-1", "write", 5, 1, 0, false)
	h.access("c2", "c2-1", "write", 6, 1, 0, false)
	h.release("c1", "c1-1", 7)
	h.release("c2", "c2-1", 8)
	r := Check(h.ev, Options{LinearizabilityTimeout: time.Nanosecond})
	if r.Linearizable != "Unknown" || !classes(r)[ClassUnknown] || classes(r)[ClassCorruption] {
		t.Fatalf("lin %s observed %v", r.Linearizable, r.Observed)
	}
	if !classes(r)[ClassOverlap] || r.Verdict != ClassOverlap {
		t.Fatalf("the overlap is certain whatever porcupine says: observed %v", r.Observed)
	}
	r = Check(h.ev, Options{LinearizabilityTimeout: time.Minute})
	if r.Linearizable != "Illegal" || !classes(r)[ClassCorruption] || classes(r)[ClassUnknown] {
		t.Fatalf("with time: lin %s observed %v", r.Linearizable, r.Observed)
	}
}

// Keys: holds on different keys may overlap; on one key they may not.
// Findings carry their key; a history without keys is one implicit key.
func TestKeysAreCheckedSeparately(t *testing.T) {
	var h b
	h.grant("c1", "c1-1", 0, 1, 1000, 0)
	h.grant("c2", "c2-1", 0, 2, 1000, 0)
	h.grant("c3", "c3-1", 0, 3, 1000, 0)
	for i := range h.ev {
		switch h.ev[i].Process {
		case "c1":
			h.ev[i].Key = "x"
		case "c2":
			h.ev[i].Key = "y"
		case "c3":
			h.ev[i].Key = "y"
		}
	}
	// c1 and c2 each do a section on their own key, at the same time, with
	// their own counters; the accesses name no key (the lease tells it).
	h.access("c1", "c1-1", "read", 4, 0, 0, false)
	h.access("c2", "c2-1", "read", 4, 0, 0, false)
	h.access("c1", "c1-1", "write", 5, 1, 0, false)
	h.access("c2", "c2-1", "write", 5, 1, 0, false)
	h.release("c1", "c1-1", 10)
	h.release("c2", "c2-1", 11)
	h.release("c3", "c3-1", 12)
	r := Check(h.ev, Options{})
	if len(r.Findings) != 1 {
		t.Fatalf("findings %+v, want the one overlap on y", r.Findings)
	}
	f := r.Findings[0]
	if f.Class != ClassOverlap || f.Key != "y" || !reflect.DeepEqual(f.Clients, []string{"c2", "c3"}) || f.From != 3*ms || f.To != 11*ms {
		t.Fatalf("finding %+v", f)
	}
	if !reflect.DeepEqual(r.Keys, []string{"x", "y"}) || r.Linearizable != "Ok" {
		t.Fatalf("keys %v lin %s", r.Keys, r.Linearizable)
	}
}

// Stretches: after sections in flight together that are linearizable, the
// next section must read the value the linearization left; reading an
// older value is corruption, even with no overlap around it.
func TestStretchCarriesTheValue(t *testing.T) {
	var h b
	h.grant("c1", "c1-1", 0, 1, 1000, 0)
	h.grant("c2", "c2-1", 0, 2, 1000, 0)
	h.access("c1", "c1-1", "read", 3, 0, 0, false)
	h.access("c1", "c1-1", "write", 6, 1, 0, false)
	h.access("c2", "c2-1", "read", 7, 1, 0, false) // c1's section [3,6] and c2's [7,8]: separate stretches
	h.access("c2", "c2-1", "write", 8, 2, 0, false)
	h.release("c1", "c1-1", 9)
	h.release("c2", "c2-1", 10)
	h.grant("c3", "c3-1", 11, 12, 1000, 0)
	h.access("c3", "c3-1", "read", 13, 1, 0, false) // stale value: c2 wrote 2
	h.access("c3", "c3-1", "write", 14, 2, 0, false)
	h.release("c3", "c3-1", 15)
	r := Check(h.ev, Options{})
	var corr *Finding
	for i := range r.Findings {
		if r.Findings[i].Class == ClassCorruption {
			corr = &r.Findings[i]
		}
	}
	if corr == nil || corr.From != 13*ms || !reflect.DeepEqual(corr.Clients, []string{"c3"}) || r.Linearizable != "Illegal" {
		t.Fatalf("findings %+v lin %s", r.Findings, r.Linearizable)
	}
	if r.SegmentCount != 3 {
		t.Fatalf("%d stretches, want 3", r.SegmentCount)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}
