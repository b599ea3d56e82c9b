package runner

import (
	"testing"

	"github.com/lockfault/lockfault/checker"
	"github.com/lockfault/lockfault/reports"
)

// An unknown verdict is exit 2 even when the expectation "matched": a
// history that cannot be judged is never a pass.
func TestCodeUnknownIsHarnessExit(t *testing.T) {
	o := &Outcome{Meta: reports.Meta{Matched: true}, Result: &checker.Result{Verdict: checker.ClassUnknown}}
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
