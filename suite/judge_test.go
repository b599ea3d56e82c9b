package suite

import (
	"strings"
	"testing"

	"github.com/lockfault/lockfault/card"
	"github.com/lockfault/lockfault/checker"
	"github.com/lockfault/lockfault/runner"
	"github.com/lockfault/lockfault/scenarios"
)

// A schedule that did not reach the lock proves nothing: unknown, unless
// something the property forbids was seen as well (violated); a matched run
// that reached it is held.
func TestJudgeNotExercised(t *testing.T) {
	plan := &runner.Plan{Scenario: &scenarios.Scenario{Expect: []string{checker.ClassSafe}, Allow: []string{checker.ClassUnavailable}}}
	ne := checker.Finding{Class: checker.ClassNotExercised}
	unknown := checker.Finding{Class: checker.ClassUnknown, Detail: "the harness stalled"}
	unavailable := checker.Finding{Class: checker.ClassUnavailable}
	stuck := checker.Finding{Class: checker.ClassStuck}
	for _, c := range []struct {
		observed []string
		findings []checker.Finding
		matched  bool
		want     card.Outcome
	}{
		{[]string{checker.ClassNotExercised}, []checker.Finding{ne}, false, card.Unknown},
		{[]string{checker.ClassNotExercised}, []checker.Finding{ne}, true, card.Unknown},
		{[]string{checker.ClassStuck, checker.ClassNotExercised}, []checker.Finding{stuck, ne}, false, card.Violated},
		{nil, nil, true, card.Held},
		// A stretch without a grant that only the harness's stalls made
		// too long is unknown: beside an allowed class, still unknown;
		// beside a forbidden one, violated.
		{[]string{checker.ClassUnknown}, []checker.Finding{unknown}, false, card.Unknown},
		{[]string{checker.ClassUnavailable, checker.ClassUnknown}, []checker.Finding{unavailable, unknown}, false, card.Unknown},
		{[]string{checker.ClassStuck, checker.ClassUnknown}, []checker.Finding{stuck, unknown}, false, card.Violated},
	} {
		res := &checker.Result{Observed: c.observed, Findings: c.findings, CycleObserved: [][]string{c.observed}}
		var row card.Row
		judge(&row, plan, res, c.matched, "expected safe")
		if row.Outcome != c.want {
			t.Errorf("observed %v (matched %v): %s, want %s", c.observed, c.matched, row.Outcome, c.want)
		}
		if c.want == card.Unknown && row.Finding == "" {
			t.Errorf("observed %v: unknown without the reason", c.observed)
		}
	}
}

// A property whose every cycle had a fault step without effect is unknown,
// never held, and its row names the step.
func TestJudgeStepWithoutEffect(t *testing.T) {
	plan := &runner.Plan{Scenario: &scenarios.Scenario{Expect: []string{checker.ClassSafe}}}
	f := checker.Finding{Class: checker.ClassUnknown, Cycle: 1,
		Detail: "cycle 1 proved nothing: no effect seen of suite/x.yaml:9: fault partition-client on n1 clients=c2: c2>n1: 0 open connection(s)"}
	res := &checker.Result{Observed: []string{checker.ClassUnknown}, Findings: []checker.Finding{f}, CycleObserved: [][]string{{checker.ClassUnknown}}}
	var row card.Row
	judge(&row, plan, res, false, "observed but not expected: unknown")
	if row.Outcome != card.Unknown || !strings.Contains(row.Finding, "fault partition-client on n1") {
		t.Fatalf("outcome %s, finding %q: want unknown naming the step", row.Outcome, row.Finding)
	}
}
