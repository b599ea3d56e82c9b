package runner

import (
	"context"
	"maps"
	"os"
	"strings"
	"testing"

	"github.com/lockfault/lockfault/scenarios"
)

// A lock's label may carry options: they are checked against the options
// the lock declares before anything starts, name the subject, and are set
// in every scenario it runs, over the scenario's own.
func TestSubjectOptions(t *testing.T) {
	ctx := context.Background()
	s, err := BuiltIn(ctx, "redisson+wait-timeout=2s+wait-replicas=1")
	if err != nil {
		t.Fatal(err)
	}
	if s.Name() != "redisson" || s.Label() != "redisson+wait-replicas=1+wait-timeout=2s" {
		t.Errorf("name %q, label %q", s.Name(), s.Label())
	}
	for label, want := range map[string]string{
		"redisson+bogus=1":                         `lock redisson has no option "bogus" (allowed: lease, watchdog, wait-replicas, wait-timeout)`,
		"redisson+wait-replicas":                   "want option=value",
		"redisson+wait-replicas=":                  "want option=value",
		"redisson+wait-replicas=1+wait-replicas=2": "given twice",
		"redisson+wait-replicas=\x1b[31m":          "printable",
		"single+wait-replicas=1":                   `lock single has no option "wait-replicas" (allowed: none)`,
		"nosuch+wait-replicas=1":                   `unknown lock "nosuch"`,
	} {
		if _, err := BuiltIn(ctx, label); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error with %q", label, err, want)
		}
	}

	// The same label through a worker command (a binary that serves many
	// locks, as lockfault-ext does): the worker is asked for the lock by
	// its name, and the options are checked against its declaration.
	ext, err := External(ctx, []string{os.Args[0]}, "redisson+wait-replicas=1")
	if err != nil || ext.Name() != "redisson" || ext.Options["wait-replicas"] != "1" || ext.Label() != "redisson+wait-replicas=1" || !ext.External() {
		t.Errorf("-worker with -lock redisson+wait-replicas=1: %v, label %q", err, ext.Label())
	}
	if _, err := External(ctx, []string{os.Args[0]}, "redisson+bogus=1"); err == nil || !strings.Contains(err.Error(), `no option "bogus"`) {
		t.Errorf("-worker with an option the lock does not declare: %v", err)
	}

	sc, err := scenarios.Load("single-crash")
	if err != nil {
		t.Fatal(err)
	}
	sc.Lock.Name, sc.Lock.Options = "redisson", map[string]string{"lease": "1s", "wait-replicas": "0"}
	plan, err := Prepare(ctx, sc, &s, Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	got := plan.Scenario.Lock.Options
	if got["lease"] != "1s" || got["wait-replicas"] != "1" || got["wait-timeout"] != "2s" {
		t.Errorf("the run's lock options are %v, want the scenario's lease and the subject's wait-replicas=1, wait-timeout=2s", got)
	}
	// The plan is the one carrier of the lock from here to the worker's
	// init: the subject and the options the run gives it, which the
	// scenario written with the run records too.
	if plan.Subject.Name() != "redisson" || !maps.Equal(plan.Options, got) || plan.Scenario.Lock.Name != plan.Subject.Name() {
		t.Errorf("plan carries lock %q with %v; the scenario records %q with %v", plan.Subject.Name(), plan.Options, plan.Scenario.Lock.Name, got)
	}
	if sc.Lock.Options["wait-replicas"] != "0" {
		t.Errorf("Prepare changed the scenario it was given: %v", sc.Lock.Options)
	}
}
