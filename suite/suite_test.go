package suite

import (
	"context"
	"maps"
	"testing"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/card"
	"github.com/lockfault/lockfault/lockimpl"
	"github.com/lockfault/lockfault/runner"
)

func TestEveryPropertyLoads(t *testing.T) {
	if len(All()) == 0 {
		t.Fatal("no properties registered")
	}
	for _, p := range All() {
		if _, err := p.Load(); err != nil {
			t.Errorf("%s: %v", p.Name, err)
		}
	}
}

func TestForSplitsByCapability(t *testing.T) {
	apply, not := For(lockimpl.Info{Name: "x", Needs: "single"})
	if len(apply) == 0 {
		t.Fatal("a single-master lock gets no property")
	}
	for _, p := range apply {
		if p.Requires != "" {
			t.Errorf("%s requires %s but was applied to a lock that claims nothing", p.Name, p.Requires)
		}
	}
	_ = not
}

// Stuck detection is on in every property, and each states what a correct
// lock gets.
func TestEveryPropertyChecksLivenessAndExpects(t *testing.T) {
	for _, p := range All() {
		sc, err := p.Load()
		if err != nil {
			t.Fatal(err)
		}
		if sc.StuckAfter.D() <= 0 {
			t.Errorf("%s: stuck_after is not set", p.Name)
		}
		if len(sc.Expect) == 0 {
			t.Errorf("%s: no expect", p.Name)
		}
		if p.Explanation == "" {
			t.Errorf("%s: no explanation", p.Name)
		}
	}
}

// LoadFor runs a single-master property on the topology the lock needs.
func TestLoadForFitsTheTopology(t *testing.T) {
	p, _ := Lookup("exclusion/no-faults")
	for needs, kind := range map[lockfault.Needs]lockfault.TopologyKind{lockfault.NeedsSingle: lockfault.Standalone, lockfault.NeedsMasters: lockfault.Masters, lockfault.NeedsEtcd: lockfault.Etcd} {
		sc, err := p.LoadFor(lockimpl.Info{Name: "x", Needs: needs})
		if err != nil {
			t.Fatal(err)
		}
		written, _ := p.Load()
		if sc.Topology.Kind != kind || sc.Lock.Name != written.Lock.Name {
			t.Errorf("needs %s: topology %s lock %s, want %s and the scenario's own lock %s (a default only Prepare replaces)", needs, sc.Topology.Kind, sc.Lock.Name, kind, written.Lock.Name)
		}
	}
	f, _ := Lookup("failover/async-replica")
	if sc, _ := f.LoadFor(lockimpl.Info{Name: "x", Needs: "single"}); sc.Topology.Kind != "replicated" {
		t.Errorf("failover property runs on %s, want replicated", sc.Topology.Kind)
	}
}

// A property's lock options reach the run through runner.Prepare, the one
// place that decides the lock: with Overrides.LockOptions the plan carries
// those the lock declares, and the scenario written with the run names the
// subject; without them (as when LoadFor alone carried them) it has none.
func TestPropertyOptionsReachThePlan(t *testing.T) {
	ctx := context.Background()
	n := 0
	for _, p := range All() {
		subj, err := runner.BuiltIn(ctx, p.Correct)
		if err != nil || len(p.Options) == 0 {
			continue
		}
		want := subj.Info.Declared(p.Options)
		if len(want) == 0 {
			continue
		}
		for _, with := range []bool{true, false} {
			sc, err := p.LoadFor(subj.Info)
			if err != nil {
				t.Fatal(err)
			}
			ov := runner.Overrides{}
			if with {
				ov.LockOptions = p.Options
			}
			plan, err := runner.Prepare(ctx, sc, &subj, ov)
			if err != nil {
				t.Fatalf("%s against %s: %v", p.Name, p.Correct, err)
			}
			if plan.Scenario.Lock.Name != subj.Name() || plan.Subject.Name() != subj.Name() {
				t.Errorf("%s against %s: the run names lock %s (scenario) and %s (subject)", p.Name, p.Correct, plan.Scenario.Lock.Name, plan.Subject.Name())
			}
			if with {
				// What the suite's own runs use gives the same.
				pp, err := p.Prepare(ctx, subj, runner.Overrides{})
				if err != nil || !maps.Equal(pp.Options, plan.Options) {
					t.Errorf("%s against %s: Property.Prepare gives options %v (%v), runner.Prepare with LockOptions %v", p.Name, p.Correct, pp.Options, err, plan.Options)
				}
			}
			for k, v := range want {
				if got, ok := plan.Options[k]; with && got != v || !with && ok {
					t.Errorf("%s against %s (options given: %v): option %s = %q, want %q", p.Name, p.Correct, with, k, got, map[bool]string{true: v, false: ""}[with])
				}
			}
		}
		n++
	}
	if n == 0 {
		t.Fatal("no property turns on an option its correct lock declares: the test checks nothing")
	}
}

// The promise table names only properties the suite has, and each listed
// violation is of a property that applies to the lock.
func TestPromiseTableNamesRealProperties(t *testing.T) {
	for lock, props := range violations {
		subj, err := runner.BuiltIn(context.Background(), lock)
		if err != nil {
			t.Errorf("promise table: %v", err)
			continue
		}
		info := subj.Info
		for name := range props {
			if name == "*" {
				continue
			}
			p, ok := Lookup(name)
			if !ok {
				t.Errorf("promise table: %s: unknown property %s", lock, name)
				continue
			}
			if o, why := Expected(info, p); o != card.Violated {
				t.Errorf("promise table: %s violates %s, but it does not apply: %s", lock, name, why)
			}
		}
	}
}
