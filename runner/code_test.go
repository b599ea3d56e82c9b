package runner

import (
	"testing"

	"github.com/lockfault/lockfault/checker"
	"github.com/lockfault/lockfault/report"
)

// An unknown verdict is exit 2 even when the expectation "matched": a
// history that cannot be judged is never a pass.
func TestCodeUnknownIsHarnessExit(t *testing.T) {
	o := &Outcome{Meta: report.Meta{Matched: true}, Result: &checker.Result{Verdict: checker.ClassUnknown}}
	if got := Code(o, nil); got != ExitHarness {
		t.Fatalf("unknown verdict: exit %d, want %d", got, ExitHarness)
	}
	o.Result.Verdict = checker.ClassSafe
	if got := Code(o, nil); got != ExitMatch {
		t.Fatalf("safe and matched: exit %d, want %d", got, ExitMatch)
	}
	o.Meta.Matched = false
	if got := Code(o, nil); got != ExitNoMatch {
		t.Fatalf("safe, not matched: exit %d, want %d", got, ExitNoMatch)
	}
}

// Unknown beside classes the scenario allows is exit 2 as well: nothing
// but the part that could not be judged stands between the run and its
// expectation. Beside a class the scenario forbids, it is a miss.
func TestCodeUnknownBesideAllowedClasses(t *testing.T) {
	meta := report.Meta{Expect: []string{checker.ClassSafe}, Allow: []string{checker.ClassUnavailable}}
	for _, c := range []struct {
		observed []string
		want     int
	}{
		{[]string{checker.ClassUnavailable, checker.ClassUnknown}, ExitHarness},
		{[]string{checker.ClassStuck, checker.ClassUnknown}, ExitNoMatch},
		{[]string{checker.ClassUnavailable}, ExitMatch},
	} {
		m := meta
		m.Matched, _ = checker.Match(c.observed, m.Expect, m.Allow)
		o := &Outcome{Meta: m, Result: &checker.Result{Verdict: c.observed[0], Observed: c.observed}}
		if got := Code(o, nil); got != c.want {
			t.Errorf("observed %v: exit %d, want %d", c.observed, got, c.want)
		}
	}
}
