package hunt

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockfault/lockfault/history"
	"github.com/lockfault/lockfault/lockimpl"
	"github.com/lockfault/lockfault/runner"
	"github.com/lockfault/lockfault/scenarios"
)

// ms is a monotonic time in milliseconds, as a history has it.
func ms(n int64) int64 { return n * int64(time.Millisecond) }

func grantAt(c, lease string, at, validUntil int64) history.Event {
	return history.Event{Kind: history.OK, Op: history.OpAcquire, Process: c, Lease: lease, Key: "k", Time: ms(at), ValidUntil: ms(validUntil)}
}

func releaseAt(c, lease string, at int64) history.Event {
	return history.Event{Kind: history.Invoke, Op: history.OpRelease, Process: c, Lease: lease, Key: "k", Time: ms(at)}
}

func TestNearMiss(t *testing.T) {
	ttl := time.Second
	for _, tc := range []struct {
		name   string
		events []history.Event
		want   float64
	}{
		{"a release hands the key over", []history.Event{
			grantAt("c1", "a", 0, 900), releaseAt("c1", "a", 300), grantAt("c2", "b", 310, 1200),
		}, math.Inf(1)},
		{"the key expires, the next holder is granted 0.15 TTL after the old validity", []history.Event{
			grantAt("c1", "a", 0, 900), grantAt("c2", "b", 1050, 1950), releaseAt("c1", "a", 1100),
		}, 0.15},
		{"the old holder's lock reported a validity the key did not have", []history.Event{
			grantAt("c1", "a", 0, 1500), grantAt("c2", "b", 1050, 1950),
		}, -0.45},
		{"an extend moved the old holder's validity past the grant", []history.Event{
			grantAt("c1", "a", 0, 900),
			{Kind: history.OK, Op: history.OpExtend, Process: "c1", Lease: "a", Key: "k", Time: ms(800), ValidUntil: ms(1700)},
			grantAt("c2", "b", 1100, 2000),
		}, -0.6},
		{"a renewal too", []history.Event{
			grantAt("c1", "a", 0, 900),
			{Kind: history.Renew, Process: "c1", Lease: "a", Key: "k", Time: ms(800), ValidUntil: ms(1200)},
			grantAt("c2", "b", 1100, 2000),
		}, -0.1},
		{"a lock that reports no validity: accesses of both holds overlap", []history.Event{
			grantAt("c1", "a", 0, 0), grantAt("c2", "b", 1000, 0),
			{Kind: history.Access, Process: "c2", Lease: "b", Key: "k", Time: ms(1050)},
			{Kind: history.Access, Process: "c1", Lease: "a", Key: "k", Time: ms(1100)},
		}, -0.05},
		{"a rejected access is no act", []history.Event{
			grantAt("c1", "a", 500, 0), grantAt("c2", "b", 1000, 0),
			{Kind: history.Access, Process: "c1", Lease: "a", Key: "k", Time: ms(1100), Rejected: true},
		}, 0.5},
		{"a holder that acts after its validity acts on its own account (a stale access, not the lock's)", []history.Event{
			grantAt("c1", "a", 0, 900), grantAt("c2", "b", 1000, 0),
			{Kind: history.Access, Process: "c1", Lease: "a", Key: "k", Time: ms(1200)},
		}, 0.1},
		{"a grant whose reply came after its validity ended: believed by nobody", []history.Event{
			grantAt("c2", "b", 0, 1500), grantAt("c1", "a", 1200, 1100),
		}, 0.1},
		{"a later grant that ends before the earlier belief: the gap is to the later's end", []history.Event{
			grantAt("c1", "a", 0, 1500), grantAt("c2", "b", 1000, 1300),
		}, -0.3},
		{"a re-entrant client releases its leases one by one", []history.Event{
			grantAt("c1", "a", 0, 900), grantAt("c1", "a#2", 100, 1000), releaseAt("c1", "a#2", 200), releaseAt("c1", "a", 300),
			grantAt("c2", "b", 310, 1300),
		}, math.Inf(1)},
		{"another key", []history.Event{
			grantAt("c1", "a", 0, 1500), {Kind: history.OK, Op: history.OpAcquire, Process: "c2", Lease: "b", Key: "other", Time: ms(1050)},
		}, math.Inf(1)},
		{"the same client", []history.Event{
			grantAt("c1", "a", 0, 1500), grantAt("c1", "b", 1050, 1950),
		}, math.Inf(1)},
	} {
		if got := NearMiss(tc.events, ttl); math.Abs(got-tc.want) > 1e-9 && !(math.IsInf(got, 1) && math.IsInf(tc.want, 1)) {
			t.Errorf("%s: margin %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestNearMissIsBounded: a history of many grants compares at most
// maxClaims of them.
func TestNearMissIsBounded(t *testing.T) {
	var events []history.Event
	for i := range int64(3 * maxClaims) {
		events = append(events, grantAt([]string{"c1", "c2"}[i%2], "l", i*1000, i*1000+900))
	}
	events = append(events, grantAt("c1", "late", 10_000_000, 20_000_000), grantAt("c2", "late2", 10_000_001, 0))
	if got := NearMiss(events, time.Second); got <= -1 {
		t.Errorf("margin %v: the grants after the first %d were compared", got, maxClaims)
	}
}

// TestRefineDrawsSmallChanges: a parent below 0 is sometimes run again
// unchanged, otherwise changed by one or two refinements; a refinement
// never drops the cycle's first fault, and every refined schedule is one
// the runner accepts (the learning search's tests compile them).
func TestRefineDrawsSmallChanges(t *testing.T) {
	sp := NewSpace(testInfo(), nil)
	sp.Commands = sampleShapes()
	g := NewGenerator(sp, 3)
	var parent *Schedule
	for parent == nil || len(parent.Events) < 2 || parent.WhileFree {
		parent = g.Next()
	}
	m := NewPlainGenerator(sp, 9)
	m.rng = rand.New(rand.NewPCG(1, 2))
	seen := map[string]int{}
	for range 400 {
		s := m.Refine(&nearEntry{s: parent, margin: -0.2})
		for _, d := range s.Derived {
			seen[d]++
		}
		if s.Events[0].Fault != parent.Events[0].Fault {
			t.Fatalf("refined %v: the first fault %s became %s", s.Derived, parent.Events[0].Fault, s.Events[0].Fault)
		}
		if len(s.Derived) == 0 || len(s.Derived) > 2 {
			t.Fatalf("refined by %v: want one or two changes, or again", s.Derived)
		}
	}
	for _, r := range append(names2(refinements), "again") {
		if seen[r] == 0 && (r != "hold-to-validity" || parent.Workload.HoldUntilValid == 0 && parent.Workload.Hold.D() < parent.TTL) {
			t.Errorf("never drew %s in 400 refinements (%v)", r, seen)
		}
	}
	for range 100 {
		if s := m.Refine(&nearEntry{s: parent, margin: 0.05}); slices.Contains(s.Derived, "again") {
			t.Fatalf("a parent above 0 was run again unchanged")
		}
	}
}

func names2(rs []struct {
	name string
	f    func(g *Generator, s *Schedule) bool
}) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.name)
	}
	return out
}

// TestLearnSearchRefinesOnlyNearMisses: the learning search refines no
// schedule until a run came near a violation, then refines that run's
// schedule; a parent refined maxRefines times leaves the pool.
func TestLearnSearchRefinesOnlyNearMisses(t *testing.T) {
	sp := NewSpace(testInfo(), nil)
	sp.Commands = sampleShapes()
	se, err := NewSearch(SearchLearn, sp, 11)
	if err != nil {
		t.Fatal(err)
	}
	isRefined := func(s *Schedule) bool {
		return slices.ContainsFunc(s.Derived, func(d string) bool {
			return d == "again" || slices.Contains(names2(refinements), d)
		})
	}
	var near *Schedule
	for i := range 60 {
		s := se.Next()
		if isRefined(s) {
			t.Fatalf("schedule %d refined (%v) before any run came near a violation", s.Index, s.Derived)
		}
		m := math.Inf(1)
		if i == 59 {
			m, near = -0.3, s
		}
		se.Observe(s, Feedback{Keys: []string{s.Name()}, Margin: m})
	}
	refined := 0
	for range 200 {
		s := se.Next()
		if isRefined(s) {
			refined++
			if s.Parent != near.Index {
				t.Fatalf("refined schedule %d has parent %d, want %d (the near miss)", s.Index, s.Parent, near.Index)
			}
		}
		se.Observe(s, Feedback{Keys: []string{s.Name()}, Margin: math.Inf(1)})
	}
	if refined != maxRefines {
		t.Errorf("the near miss was refined %d times, want %d (then it leaves the pool)", refined, maxRefines)
	}
}

func testInfo() lockimpl.Info {
	return lockimpl.Info{Name: "x", Needs: lockimpl.NeedsSingle, Caps: []string{lockimpl.CapExtend}}
}

// TestNearMissLeadsTheSearch: on a made-up lock whose violation hides in
// a narrow band of pause lengths (1.30 to 1.36 TTL, off every list the
// generators draw lengths from) and shows only when the holder holds
// until its validity, and whose runs come nearer the band the nearer the
// pause (a margin that falls to 0 at its edge, below 0 inside without
// the hold), the learning search finds the violation with every seed
// within a budget where the random search, which learns nothing, finds
// it with none. The whole loop is under test: the fake runs write
// histories, the hunt reads their margin (NearMiss), the search refines
// its nearest runs.
func TestNearMissLeadsTheSearch(t *testing.T) {
	exec := func(ctx context.Context, sc *scenarios.Scenario) (*runner.Outcome, error) {
		ttl := sc.Lock.TTL.D()
		d := float64(pausedFor(sc)) / float64(ttl)
		lo, hi := 1.30, 1.36
		m := 0.5 // no pause, or far from the band
		switch {
		case d >= lo && d <= hi && sc.Workload.HoldUntilValid > 0:
			m = -0.3
		case d >= lo && d <= hi:
			m = -0.1
		case d > 0:
			m = math.Min(0.5, math.Min(math.Abs(d-lo), math.Abs(d-hi)))
		}
		t0, end := int64(1), 1+ttl.Milliseconds()
		grant := end + int64(m*float64(ttl.Milliseconds()))
		var evs []history.Event
		for i, g := range []history.Event{grantAt("c1", "a", t0, end), grantAt("c2", "b", grant, grant+ttl.Milliseconds())} {
			g.OpID = int64(i + 1)
			evs = append(evs, history.Event{Kind: history.Invoke, Op: g.Op, OpID: g.OpID, Process: g.Process, Key: g.Key, Time: g.Time}, g)
		}
		return fakeRun(t, evs, m < -0.2)
	}
	sp := NewSpace(lockimpl.Info{Name: "x", Needs: lockimpl.NeedsSingle}, nil)
	sp.Commands = sampleShapes()
	found := foundBy(t, sp, exec, 150)
	if found[SearchLearn] != 5 || found[SearchRandom] >= found[SearchLearn] {
		t.Errorf("found with %d of 5 seeds by the learning search, %d by the random one; want 5, and fewer", found[SearchLearn], found[SearchRandom])
	}
}

// The card says how near the runs came: the smallest margin and its
// schedule, the runs within nearEnough and below 0; or that no key
// changed hands without a release.
func TestNearestLine(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	if got := nearestLine([]CoveragePoint{{Index: 1}, {Index: 2}}); !strings.Contains(got, "no run handed a key") {
		t.Errorf("no margin: %q", got)
	}
	got := nearestLine([]CoveragePoint{{Index: 1}, {Index: 2, Near: f(0.4)}, {Index: 3, Near: f(0.01)}, {Index: 5, Near: f(-0.002)}, {Index: 4, Near: f(0.1)}})
	if want := "-0.0020 in schedule 5; 3 run(s) within 0.15, 1 below 0"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
