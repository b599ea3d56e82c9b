package suite_test

import (
	"context"
	"slices"
	"testing"

	"github.com/lockfault/lockfault/runner"
	"github.com/lockfault/lockfault/suite"
)

// A lock that declares a property's failpoint is attacked through it; one
// that does not gets the by-command variant. (The variant names no lock of
// its own, so it once matched every lock by the base's name, and the
// failpoint locks ran the by-command schedule.)
func TestFailpointLocksKeepTheirFailpoint(t *testing.T) {
	for _, p := range suite.All() {
		if p.Failpoint == "" {
			continue
		}
		for _, lock := range []string{p.Broken, p.Correct, p.Broken + noFailpoints} {
			subj, err := runner.BuiltIn(context.Background(), lock)
			if err != nil {
				t.Fatal(err)
			}
			sc, err := p.LoadFor(subj.Info)
			if err != nil {
				t.Fatal(err)
			}
			plan, err := runner.Prepare(context.Background(), sc, &subj, runner.Overrides{})
			if err != nil {
				t.Fatal(err)
			}
			want := ""
			if !slices.Contains(subj.Info.Failpoints, p.Failpoint) {
				want = suite.VariantByCommand
			}
			if got := plan.Scenario.Variant; got != want {
				t.Errorf("%s against %s (failpoints %v) runs variant %q, want %q", p.Name, lock, subj.Info.Failpoints, got, want)
			}
		}
	}
}
