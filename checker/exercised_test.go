package checker

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockfault/lockfault/history"
)

func TestFailpointThatNeverFiredIsNotExercised(t *testing.T) {
	arm := history.Event{Kind: history.FaultStart, Fault: "failpoint", Target: "holder", Time: 100, Detail: "fault failpoint on holder action=stop ms=1s name=before-extend"}
	disarm := history.Event{Kind: history.FaultEnd, Fault: "failpoint", Target: "holder", Time: 2e9}
	never := []history.Event{arm, disarm}
	fs := NotExercised(never)
	if len(fs) != 1 || fs[0].Class != ClassNotExercised {
		t.Fatalf("a failpoint that never fired: %+v, want one not-exercised finding", fs)
	}
	for _, evidence := range []history.Event{
		{Kind: history.Note, Op: NoteFired, Process: "c1", Time: 500, Detail: "before-extend stop"},
		{Kind: history.FaultStart, Fault: "failpoint-stop", Target: "c1", Time: 500, Detail: "before-extend"},
		{Kind: history.Note, Op: "crashed", Process: "c1", Time: 500},
	} {
		if fs := NotExercised([]history.Event{arm, evidence, disarm}); len(fs) != 0 {
			t.Errorf("fired (%s %s) but reported %+v", evidence.Kind, evidence.Op+evidence.Fault, fs)
		}
	}
	// Another failpoint firing is no evidence.
	other := history.Event{Kind: history.Note, Op: NoteFired, Process: "c1", Time: 500, Detail: "before-extended stop"}
	if fs := NotExercised([]history.Event{arm, other, disarm}); len(fs) != 1 {
		t.Errorf("another failpoint's firing counted: %+v", fs)
	}
	// Through Check: the class is observed, so the run cannot be safe.
	r := Check([]history.Event{arm, disarm, {Kind: history.Note, Op: NoteNotExercised, Time: 3e9, Detail: "worker cannot hit x"}}, Options{})
	if n := count(r.Findings, ClassNotExercised); n != 2 || r.Verdict == ClassSafe {
		t.Fatalf("verdict %s, %d not-exercised findings in %+v; want 2", r.Verdict, n, r.Findings)
	}
}

func TestAwaitTimeoutIsUnavailableWithItsDuration(t *testing.T) {
	evs := []history.Event{{Kind: history.Note, Op: NoteUnavailable, Time: 40e9, DurationMs: 30000, Detail: "no grant within 30s"}}
	r := Check(evs, Options{})
	if count(r.Findings, ClassUnavailable) != 1 || r.Verdict == ClassSafe {
		t.Fatalf("verdict %s findings %+v", r.Verdict, r.Findings)
	}
	for _, f := range r.Findings {
		if f.Class == ClassUnavailable && f.To-f.From != 30e9 {
			t.Fatalf("finding spans %d ns, want 30 s", f.To-f.From)
		}
	}
}

func count(fs []Finding, class string) int {
	n := 0
	for _, f := range fs {
		if f.Class == class {
			n++
		}
	}
	return n
}

// A clock-client fault none of whose activations was seen to move the
// lock's clock attacked nothing; one seen activation is enough.
func TestClockStepWithoutEffectIsNotExercised(t *testing.T) {
	start := func(at int64) history.Event {
		return history.Event{Kind: history.FaultStart, Fault: "clock-client", Target: "c1", Time: at, Detail: "clock-client on c1 by=-1s every=10ms"}
	}
	end := func(at int64) history.Event {
		return history.Event{Kind: history.FaultEnd, Fault: "clock-client", Target: "c1", Time: at}
	}
	note := func(op string, at int64) history.Event {
		return history.Event{Kind: history.Note, Op: op, Process: "c1", Time: at, Detail: "c1: clock step to offset -1s: its lock's wall clock read 0s from real time"}
	}
	sec := int64(time.Second)
	unseen := []history.Event{start(0), note(NoteClockUnseen, 1), end(sec), start(2 * sec), end(3 * sec)}
	fs := NotExercised(unseen)
	if len(fs) != 2 || fs[0].Class != ClassNotExercised || !strings.Contains(fs[0].Detail, "read 0s from real time") {
		t.Fatalf("findings %+v, want two not-exercised, the first saying what was read", fs)
	}
	seen := append(slices.Clone(unseen[:3]), start(2*sec), note(NoteClockSeen, 2*sec+1), end(3*sec))
	if fs := NotExercised(seen); len(fs) != 0 {
		t.Fatalf("findings %+v, want none: one activation was seen", fs)
	}
}
