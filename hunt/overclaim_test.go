package hunt

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/history"
	"github.com/lockfault/lockfault/scenarios"
)

// opAt is an operation of c as the worker records it: its invoke at
// invoked, its completion at done with the validity the lock reported
// (ms; 0: none).
func opAt(c, op string, id, invoked, done, validUntil int64, kind string) []history.Event {
	return []history.Event{
		{Kind: history.Invoke, Op: op, OpID: id, Process: c, Key: "k", Time: ms(invoked)},
		{Kind: kind, Op: op, OpID: id, Process: c, Key: "k", Time: ms(done), ValidUntil: ms(validUntil)},
	}
}

// An extend overclaims when the validity it reported ends at least
// overclaimEnough TTLs after its invoke plus one TTL: a lock that dates
// its validity from the reply, once the reply was late. A lock that
// dates it from before its request never does, however late the reply.
// Acquires are not measured (they wait for the key).
func TestOverclaims(t *testing.T) {
	const ttl = 1000 // ms
	x := history.OpExtend
	cases := []struct {
		name   string
		events [][]history.Event
		want   []string
	}{
		{"dated from the request, the reply late", [][]history.Event{opAt("c1", x, 1, 100, 400, 100+ttl-12, history.OK)}, nil},
		{"dated from the reply, the reply prompt", [][]history.Event{opAt("c1", x, 1, 100, 101, 101+ttl, history.OK)}, nil},
		{"dated from the reply, the reply 40 ms late (or the worker's clock read)", [][]history.Event{opAt("c1", x, 1, 100, 140, 140+ttl, history.OK)}, nil},
		{"dated from the reply, the reply 60 ms late", [][]history.Event{
			opAt("c1", history.OpAcquire, 1, 10, 11, 10+ttl, history.OK),
			opAt("c1", x, 2, 100, 160, 160+ttl, history.OK)}, []string{x}},
		{"the same op id of another client is another operation", [][]history.Event{{
			{Kind: history.Invoke, Op: x, OpID: 1, Process: "c1", Time: ms(100)},
			{Kind: history.Invoke, Op: x, OpID: 1, Process: "c2", Time: ms(500)},
			{Kind: history.OK, Op: x, OpID: 1, Process: "c2", Time: ms(510), ValidUntil: ms(500 + ttl)},
			{Kind: history.OK, Op: x, OpID: 1, Process: "c1", Time: ms(520), ValidUntil: ms(100 + ttl)}}}, nil},
		{"an acquire that waited 300 ms, dated from its last attempt", [][]history.Event{opAt("c1", history.OpAcquire, 1, 100, 400, 399+ttl, history.OK)}, nil},
		{"a client stopped before the lock read its clock", [][]history.Event{{
			{Kind: history.Invoke, Op: x, OpID: 1, Process: "c1", Time: ms(100)},
			{Kind: history.FaultStart, Fault: "pause-client", Target: "holder", Time: ms(101)},
			{Kind: history.FaultEnd, Fault: "pause-client", Target: "holder", Time: ms(400)},
			{Kind: history.OK, Op: x, OpID: 1, Process: "c1", Time: ms(402), ValidUntil: ms(400 + ttl)}}}, nil},
		{"invoked while a client was stopped", [][]history.Event{{
			{Kind: history.FaultStart, Fault: "pause-client", Target: "others", Time: ms(90)},
			{Kind: history.Invoke, Op: x, OpID: 1, Process: "c1", Time: ms(100)},
			{Kind: history.FaultEnd, Fault: "pause-client", Target: "others", Time: ms(400)},
			{Kind: history.OK, Op: x, OpID: 1, Process: "c1", Time: ms(402), ValidUntil: ms(400 + ttl)}}}, nil},
		{"a node fault is measured (the reply late, the client running)", [][]history.Event{{
			{Kind: history.Invoke, Op: x, OpID: 1, Process: "c1", Time: ms(100)},
			{Kind: history.FaultStart, Fault: "pause-node", Target: "primary", Time: ms(101)},
			{Kind: history.FaultEnd, Fault: "pause-node", Target: "primary", Time: ms(400)},
			{Kind: history.OK, Op: x, OpID: 1, Process: "c1", Time: ms(402), ValidUntil: ms(400 + ttl)}}}, []string{x}},
		{"a client fault over before the invoke", [][]history.Event{{
			{Kind: history.FaultStart, Fault: "pause-client", Target: "holder", Time: ms(10)},
			{Kind: history.FaultEnd, Fault: "pause-client", Target: "holder", Time: ms(50)},
			{Kind: history.Invoke, Op: x, OpID: 1, Process: "c1", Time: ms(100)},
			{Kind: history.OK, Op: x, OpID: 1, Process: "c1", Time: ms(402), ValidUntil: ms(400 + ttl)}}}, []string{x}},
		{"a busy machine: one late extend of four overclaimed (its worker stopped before the lock read its clock)", [][]history.Event{
			opAt("c1", x, 1, 100, 300, 100+ttl, history.OK),
			opAt("c1", x, 2, 1100, 1400, 1100+ttl, history.OK),
			opAt("c1", x, 3, 2100, 2250, 2100+ttl, history.OK),
			opAt("c1", x, 4, 3100, 3304, 3270+ttl, history.OK),
			opAt("c1", x, 5, 4100, 4110, 4101+ttl, history.OK)}, nil},
		{"dated from the reply: two late extends of three overclaimed (one a prompt reply)", [][]history.Event{
			opAt("c1", x, 1, 100, 300, 300+ttl, history.OK),
			opAt("c1", x, 2, 1100, 1150, 1150+ttl-10, history.OK),
			opAt("c1", x, 3, 2100, 2190, 2190+ttl, history.OK),
			opAt("c1", x, 4, 3100, 3110, 3110+ttl, history.OK)}, []string{x}},
		{"a failed extend reports nothing", [][]history.Event{opAt("c1", x, 1, 100, 400, 400+ttl, history.Fail)}, nil},
		{"no validity reported", [][]history.Event{opAt("c1", x, 1, 100, 400, 0, history.OK)}, nil},
		{"a completion without its invoke", [][]history.Event{opAt("c1", x, 1, 100, 400, 400+ttl, history.OK)[1:]}, nil},
	}
	for _, c := range cases {
		var evs []history.Event
		for _, e := range c.events {
			evs = append(evs, e...)
		}
		if got := Overclaims(evs, ttl*time.Millisecond); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	if got := Overclaims(opAt("c1", x, 1, 100, 400, 400+ttl, history.OK), 0); got != nil {
		t.Errorf("no TTL: %v, want nothing", got)
	}
}

// Stretch draws the attack on an operation: its successful reply held
// while its client is stopped longer than a careful holder's margin, no
// other fault, holders that hold until their validity; every such
// schedule is one the runner accepts, for every kind of built-in lock.
// With no command of the operation seen it is a fresh draw.
func TestStretchDrawsTheAttack(t *testing.T) {
	for _, lock := range builtInLocks {
		subj := builtIn(t, lock)
		sp := NewSpace(subj.Info, BuiltInLimits(lock))
		sp.Commands = sampleShapes()
		g := NewGenerator(sp, 7)
		for i := range 40 {
			op := []string{scenarios.OpAcquire, scenarios.OpExtend}[i%2]
			s := g.Stretch(op)
			a := s.Anchor
			if a == nil || a.Op != op || a.At != scenarios.AtReply || a.Reply != scenarios.ReplyOK || s.WhileFree {
				t.Fatalf("%s: stretch %s anchored on %v", lock, op, a)
			}
			if len(s.Events) != 1 || s.Events[0].Fault != "pause-client" || s.Events[0].Target != lockfault.TargetTrigger ||
				s.Events[0].At != 0 || s.Events[0].Dur < scale(s.TTL, 0.15) || s.Events[0].Dur > scale(s.TTL, 0.6) {
				t.Fatalf("%s: stretch %s draws %v", lock, op, s.Faults())
			}
			w := s.Workload
			if w.HoldUntilValid.D() != scale(s.TTL, 0.1) || w.Reentry != 0 || (op == scenarios.OpExtend && (w.Extends != 1 || w.ExtendEvery == 0)) {
				t.Fatalf("%s: stretch %s with workload %+v", lock, op, w)
			}
			mustPrepare(t, subj, s, lock)
		}
	}
	sp := NewSpace(testInfo(), nil)
	sp.Commands = sampleShapes()[:1] // acquire's command only
	if s := NewGenerator(sp, 7).Stretch(scenarios.OpExtend); len(s.Derived) != 0 {
		t.Errorf("no extend command seen: derived %v, want a fresh draw", s.Derived)
	}
}

// stretchedExtend: the cycle stops the client whose extend's reply is
// held, for at least 0.15 TTL, and its holders hold until their validity.
func stretchedExtend(sc *scenarios.Scenario) bool {
	for _, st := range sc.Nemesis.Steps {
		if st.Command != nil && st.Command.Op == scenarios.OpExtend && st.Command.At == scenarios.AtReply && st.Command.Reply == scenarios.ReplyOK {
			return pausedFor(sc) >= scale(sc.Lock.TTL.D(), 0.15) && sc.Workload.HoldUntilValid > 0
		}
	}
	return false
}

// TestOverclaimLeadsTheSearch: on a made-up lock that dates an extend's
// validity from its reply (every run that extends shows it overclaiming
// by 200 ms: a late reply), and whose violation shows only when a client is stopped
// while its extend's reply is held, long enough, and holders hold until
// their validity (in one such run in two, as a real race), the learning
// search finds the violation with every seed within a budget where the
// random search finds it with fewer. The fake runs write histories; the
// hunt reads them (Overclaims); the search stretches the extend.
func TestOverclaimLeadsTheSearch(t *testing.T) {
	sp := NewSpace(testInfo(), nil)
	sp.Commands = sampleShapes()
	attackLeads(t, sp, stretchedExtend, func(sc *scenarios.Scenario) []history.Event {
		ttl := sc.Lock.TTL.D().Milliseconds()
		evs := opAt("c1", history.OpAcquire, 1, 10, 11, 10+ttl, history.OK)
		if sc.Workload.Extends > 0 {
			evs = append(evs, opAt("c1", history.OpExtend, 2, 100, 300, 300+ttl, history.OK)...)
		}
		return evs
	})
}

// One run that overclaims (a correct lock's invoke stalled on its way to
// the worker) does not turn the stretches on; overclaimRuns runs do, and
// then only the operation that overclaimed is stretched.
func TestStretchWaitsForOverclaimRuns(t *testing.T) {
	sp := NewSpace(testInfo(), nil)
	sp.Commands = sampleShapes()
	se, err := NewSearch(SearchLearn, sp, 3)
	if err != nil {
		t.Fatal(err)
	}
	stretched := func(n int) (count int) {
		for range n {
			s := se.Next()
			if len(s.Derived) > 0 && strings.HasPrefix(s.Derived[0], "stretch") {
				if s.Derived[0] != "stretch extend" {
					t.Fatalf("stretched %v, want only the extend", s.Derived)
				}
				count++
			}
			se.Observe(s, Feedback{Keys: []string{s.Name()}, Margin: math.Inf(1)})
		}
		return count
	}
	se.Observe(&Schedule{Index: 1}, Feedback{Over: []string{scenarios.OpExtend}, Margin: math.Inf(1)})
	if n := stretched(100); n != 0 {
		t.Errorf("after one overclaiming run: %d stretches in 100 draws, want 0", n)
	}
	se.Observe(&Schedule{Index: 2}, Feedback{Over: []string{scenarios.OpExtend}, Margin: math.Inf(1)})
	if n := stretched(100); n < 20 || n > 50 {
		t.Errorf("after two: %d stretches in 100 draws, want about a third", n)
	}
}

// The card says which operations overclaimed, in how many runs, first
// where; or never.
func TestOverclaimLine(t *testing.T) {
	if got := overclaimLine([]CoveragePoint{{Index: 1}, {Index: 2}}); got != "never" {
		t.Errorf("none: %q", got)
	}
	got := overclaimLine([]CoveragePoint{{Index: 1}, {Index: 3, Over: []string{"extend"}}, {Index: 2, Over: []string{"acquire", "extend"}}, {Index: 4, Over: []string{"extend"}}})
	if want := "acquire in 1 run(s), first schedule 2; extend in 3 run(s), first schedule 3"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// The probe asks the lock whether it dates an extend's validity from the
// reply: its successful reply held 0.2 TTL with the client running, ended
// by a short pause of a node; a schedule the runner accepts. The learning
// search draws it once, as soon as the lock was seen to extend (here,
// from the start: its second schedule), and one overclaiming probe turns
// the stretches on (where one ordinary run does not). No extend command:
// no probe, until one is seen.
func TestProbeAsksOnce(t *testing.T) {
	for _, lock := range builtInLocks {
		subj := builtIn(t, lock)
		sp := NewSpace(subj.Info, BuiltInLimits(lock))
		sp.Commands = sampleShapes()
		p := NewGenerator(sp, 5).Probe(scenarios.OpExtend)
		if p == nil {
			t.Fatalf("%s: no probe", lock)
		}
		a := p.Anchor
		if a.Op != scenarios.OpExtend || a.At != scenarios.AtReply || a.Reply != scenarios.ReplyOK || len(p.Events) != 1 ||
			p.Events[0].Fault != "pause-node" || p.Events[0].At != scale(p.TTL, probeHold) || p.Events[0].Dur != scale(p.TTL, probeNodePause) {
			t.Fatalf("%s: probe %v", lock, p.Faults())
		}
		if !strings.HasPrefix(p.Faults()[0], "after command") || !strings.Contains(p.Faults()[0], "the reply held") {
			t.Errorf("%s: the probe holds no reply: %v", lock, p.Faults())
		}
		mustPrepare(t, subj, p, lock)
	}
	sp := NewSpace(testInfo(), nil)
	sp.Commands = sampleShapes()[:1]
	if p := NewGenerator(sp, 5).Probe(scenarios.OpExtend); p != nil {
		t.Errorf("no extend command seen: probe %v, want none", p.Faults())
	}

	sp = NewSpace(testInfo(), nil)
	sp.Commands = sampleShapes()
	stretches := func(over bool) int {
		se, err := NewSearch(SearchLearn, sp, 3)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for i := range 100 {
			s := se.Next()
			if i == 1 && (len(s.Derived) == 0 || s.Derived[0] != "probe extend") {
				t.Fatalf("schedule 2 is %v, want the probe", s.Derived)
			}
			if len(s.Derived) > 0 && s.Derived[0] == "stretch extend" {
				n++
			}
			f := Feedback{Keys: []string{s.Name()}, Margin: math.Inf(1)}
			if i == 1 && over {
				f.Over = []string{scenarios.OpExtend}
			}
			se.Observe(s, f)
		}
		return n
	}
	if n := stretches(false); n != 0 {
		t.Errorf("a probe that did not overclaim: %d stretches, want 0", n)
	}
	if n := stretches(true); n < 20 {
		t.Errorf("a probe that overclaimed: %d stretches in 98 draws, want about a third", n)
	}

	// Commands learnt late: the probe comes with the first draw after the
	// extend's command was seen, and only once.
	sp = NewSpace(testInfo(), nil)
	sp.Commands = sampleShapes()[:1]
	se, err := NewSearch(SearchLearn, sp, 3)
	if err != nil {
		t.Fatal(err)
	}
	var probes []int
	for i := range 30 {
		if i == 10 {
			sp.Commands = sampleShapes()
		}
		s := se.Next()
		if len(s.Derived) > 0 && s.Derived[0] == "probe extend" {
			probes = append(probes, s.Index)
		}
		se.Observe(s, Feedback{Keys: []string{s.Name()}, Margin: math.Inf(1)})
	}
	if !slices.Equal(probes, []int{11}) {
		t.Errorf("probes at %v, want once, at 11 (the first draw with the extend seen)", probes)
	}
}
