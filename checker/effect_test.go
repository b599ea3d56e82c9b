package checker

import (
	"strings"
	"testing"

	"github.com/lockfault/lockfault/history"
)

// csOp adds a completed critical section (invoke and ok) from inv to ok.
func (h *b) csOp(p, lease string, inv, ok int64) {
	h.op++
	h.add(history.Event{Time: inv * ms, Kind: history.Invoke, Process: p, Op: history.OpCS, OpID: h.op, Lease: lease})
	h.add(history.Event{Time: ok * ms, Kind: history.OK, Process: p, Op: history.OpCS, OpID: h.op, Lease: lease})
}

// cycleWithStep adds one cycle from at: a fault step whose effect was seen
// (op NoteEffect) or not (NoteNoEffect), then a grant, a critical section
// and a release.
func (h *b) cycleWithStep(cycle int, at int64, op, lease string) {
	h.add(history.Event{Time: at * ms, Kind: history.Note, Op: history.NoteCycle, Cycle: cycle})
	h.add(history.Event{Time: (at + 1) * ms, Kind: history.FaultStart, Fault: "pause-node", Target: "n1", Cycle: cycle})
	h.add(history.Event{Time: (at + 2) * ms, Kind: history.Note, Op: op, Fault: "pause-node", Target: "n1", Cycle: cycle,
		Detail: "s.yaml:9: fault pause-node on n1: n1 stopped: no process"})
	h.add(history.Event{Time: (at + 3) * ms, Kind: history.FaultEnd, Fault: "pause-node", Target: "n1", Cycle: cycle})
	h.grant("c1", lease, at+4, at+5, at+1000, 0)
	h.csOp("c1", lease, at+6, at+8)
	h.cs("c1", lease, at+6, at+7, int64(cycle-1))
	h.release("c1", lease, at+9)
}

// A cycle whose fault step was not seen to take effect has no evidence: an
// unknown finding names the step, the summary counts it, and the rates
// agree; a cycle whose step took effect keeps its evidence.
func TestStepWithoutEffectLeavesItsCycleWithoutEvidence(t *testing.T) {
	var h b
	h.cycleWithStep(1, 0, NoteEffect, "c1-1")
	h.cycleWithStep(2, 100, NoteNoEffect, "c1-2")
	r := Check(h.ev, Options{Evidence: &DefaultEvidence})
	ev := r.Evidence
	if ev.Cycles != 2 || ev.Shown != 1 || ev.Steps != 2 || ev.Seen != 1 {
		t.Fatalf("evidence %+v (%s): want 1 of 2 cycles, 1 of 2 steps seen", *ev, ev.Text())
	}
	if !strings.Contains(ev.Text(), "1 of 2 fault steps seen to take effect") {
		t.Errorf("summary %q does not count the steps", ev.Text())
	}
	var named bool
	for _, f := range r.Findings {
		if f.Class == ClassUnknown && f.Cycle == 2 && strings.Contains(f.Detail, "fault pause-node on n1") {
			named = true
		}
	}
	if !named || r.Verdict != ClassUnknown {
		t.Fatalf("verdict %s, findings %+v: want unknown naming the step in cycle 2", r.Verdict, r.Findings)
	}
	if hits, of := r.Rate(ClassUnknown); hits != 1 || of != 2 {
		t.Errorf("unknown in %d of %d cycles, want 1 of 2", hits, of)
	}
}

// cycleWithPending adds one cycle whose fault step was judged at its heal:
// pending, then settled by settle (NoteEffectAtHeal, NoteNoEffect), or by
// nothing when settle is "".
func (h *b) cycleWithPending(cycle int, at int64, settle, lease string) {
	h.add(history.Event{Time: at * ms, Kind: history.Note, Op: history.NoteCycle, Cycle: cycle})
	h.add(history.Event{Time: (at + 1) * ms, Kind: history.FaultStart, Fault: "partition-client", Target: "n4", Cycle: cycle})
	h.add(history.Event{Time: (at + 2) * ms, Kind: history.Note, Op: NoteEffectPending, Fault: "partition-client", Target: "n4", Cycle: cycle,
		Detail: "s.yaml:9: fault partition-client on n4: c1>n4: 0 open connection(s)"})
	h.grant("c1", lease, at+4, at+5, at+1000, 0)
	h.csOp("c1", lease, at+6, at+8)
	h.cs("c1", lease, at+6, at+7, int64(cycle-1))
	if settle != "" {
		h.add(history.Event{Time: (at + 9) * ms, Kind: history.Note, Op: settle, Fault: "partition-client", Target: "n4", Cycle: cycle,
			Detail: "s.yaml:9: fault partition-client on n4: at its heal: c1>n4: 1 connection(s) dialed while it lasted"})
		h.add(history.Event{Time: (at + 10) * ms, Kind: history.FaultEnd, Fault: "partition-client", Target: "n4", Cycle: cycle})
	}
	h.release("c1", lease, at+11)
}

// A step judged at its heal gives its cycle evidence only when its effect
// was seen then: settled as not seen, or never settled (the run ended
// first), the cycle proves nothing, and the step counts once either way.
func TestPendingStepIsJudgedAtItsHeal(t *testing.T) {
	for _, c := range []struct {
		settle string
		shown  int
		want   string
	}{
		{NoteEffectAtHeal, 1, ""},
		{NoteNoEffect, 0, "no effect seen of s.yaml:9: fault partition-client on n4: at its heal"},
		{"", 0, "no effect judged of s.yaml:9: fault partition-client on n4: c1>n4: 0 open connection(s) (the run ended before its heal)"},
	} {
		var h b
		h.cycleWithPending(1, 0, c.settle, "c1-1")
		r := Check(h.ev, Options{Evidence: &DefaultEvidence})
		ev := r.Evidence
		seen := c.shown
		if ev.Cycles != 1 || ev.Shown != c.shown || ev.Steps != 1 || ev.Seen != seen {
			t.Errorf("settled by %q: evidence %+v, want %d of 1 cycles shown, %d of 1 steps seen", c.settle, *ev, c.shown, seen)
		}
		if c.want == "" {
			if r.Verdict != ClassSafe {
				t.Errorf("settled by %q: verdict %s (%+v), want safe", c.settle, r.Verdict, r.Findings)
			}
			continue
		}
		if r.Verdict != ClassUnknown || len(r.Findings) == 0 || !strings.Contains(r.Findings[0].Detail, c.want) {
			t.Errorf("settled by %q: verdict %s, findings %+v: want unknown saying %q", c.settle, r.Verdict, r.Findings, c.want)
		}
	}
}
