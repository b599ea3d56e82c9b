package suite_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockfault/lockfault/card"
	"github.com/lockfault/lockfault/checker"
	"github.com/lockfault/lockfault/runner"
	"github.com/lockfault/lockfault/suite"
)

// A lock whose worker dies in every critical section is never held: the
// card says violated (its process died) or unknown (the run proved
// nothing), and no baseline records it as held.
func TestDyingWorkerIsNeverHeld(t *testing.T) {
	t.Parallel()
	subj, err := runner.External(context.Background(), []string{"/usr/bin/python3", filepath.Join("..", "runner", "testdata", "liar.py"), "die-in-cs"}, "")
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := suite.Run(context.Background(), subj, suite.Options{Run: runner.Options{Backend: backend(), ReportsDir: t.TempDir()},
		Cycles: 1, Only: []string{"exclusion/no-faults", "crash/frees-within-ttl"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range c.Rows {
		if r.Outcome == card.Held || r.Outcome == card.HarnessError {
			t.Errorf("%s: %s; want violated or unknown", r.Property, r.Summary())
		}
	}
	if r, _ := c.Row("exclusion/no-faults"); r.Outcome != card.Violated || !slices.Contains(r.Observed, checker.ClassDied) {
		t.Errorf("exclusion/no-faults: %s (observed %v); want violated, the worker's death among what was observed", r.Summary(), r.Observed)
	}
	code, _ := suite.Gate(c, subj, nil, "")
	if code == suite.ExitOK {
		t.Error("the gate passed a lock whose process dies")
	}
	// A card with an unknown row is no baseline.
	c.Rows = append(c.Rows, card.Row{Property: "x/y", Outcome: card.Unknown, Finding: "cycle 1 proved nothing"})
	if _, err := card.FormatBaseline(c); err == nil || !strings.Contains(err.Error(), "unknown") {
		t.Errorf("a card with an unknown row made a baseline (%v)", err)
	}
}
