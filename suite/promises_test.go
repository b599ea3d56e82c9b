package suite_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/lockfault/lockfault/card"
	"github.com/lockfault/lockfault/lockimpl"
	"github.com/lockfault/lockfault/runner"
	"github.com/lockfault/lockfault/suite"
)

// builtins are the product's locks (not the broken ones of the tests).
func builtins() []lockimpl.Info {
	var out []lockimpl.Info
	for _, n := range runner.KnownLocks(context.Background()) {
		if s, err := runner.BuiltIn(context.Background(), n); err == nil && s.Info.Source != "suite mutation test" {
			out = append(out, s.Info)
		}
	}
	return out
}

// promiseSubset is what `make test` runs by default: every property against
// single, and the broken built-ins on the properties they break, one cycle
// each. LOCKFAULT_PROMISES=all runs every built-in lock with each
// property's own cycles; LOCKFAULT_PROMISES=single,redlock runs those.
var promiseSubset = map[string][]string{
	"single":          nil, // nil: every property
	"del-release":     {"stale/release-after-pause"},
	"get-del-release": {"stale/release-mid-release"},
	"setnx-expire":    {"crash/mid-acquire"},
	// A safety option on and off: the same property, opposite outcomes.
	"redisson":                 {"failover/async-replica"},
	"redisson+wait-replicas=1": {"failover/async-replica"},
}

// promiseSubjects are the built-in locks and the safety options of
// suite.Remedies.
func promiseSubjects(t *testing.T) []runner.Subject {
	var out []runner.Subject
	for _, info := range builtins() {
		out = append(out, runner.Subject{Info: info, Shipped: true})
	}
	for _, l := range suite.RemedyLocks() {
		s, err := runner.BuiltIn(context.Background(), l)
		if err != nil {
			t.Fatalf("suite.Remedies names %s: %v", l, err)
		}
		out = append(out, s)
	}
	return out
}

// TestPromises runs built-in locks through the suite and compares each
// outcome with the promise table (suite.Expected):
//
//	go test -run 'TestPromises/single' ./suite                       # the default subset for single
//	LOCKFAULT_PROMISES=redlock go test -run 'TestPromises/redlock' ./suite
//	LOCKFAULT_PROMISES=all go test -timeout 2h -run TestPromises ./suite
func TestPromises(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: runs real nodes")
	}
	sel := os.Getenv("LOCKFAULT_PROMISES")
	cycles := 1
	if sel != "" {
		cycles = 0 // the properties' own cycles
	}
	want := map[string]bool{}
	for _, n := range strings.Split(sel, ",") {
		want[n] = n != ""
	}
	for _, subj := range promiseSubjects(t) {
		name := subj.Label()
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			only, inSubset := promiseSubset[name]
			if !want["all"] && !want[name] && !inSubset {
				t.Skipf("not in the default subset (LOCKFAULT_PROMISES=%s or all runs it)", name)
			}
			for _, p := range suite.All() {
				t.Run(p.Name, func(t *testing.T) {
					t.Parallel() // each property's run has its own nodes and workers
					exp, why := suite.Promise(subj, p)
					if exp == card.NotClaimed {
						t.Skipf("not claimed: %s", why)
					}
					if sel == "" && only != nil && !slices.Contains(only, p.Name) {
						t.Skip("not in the default subset")
					}
					skipUnmovedClock(t, p.Name, name)
					o := runProperty(t, p.Name, name, cycles)
					switch got := held(o); {
					case exp == card.Held && !got:
						t.Errorf("promise table: %s holds %s; the run says violated: %s\n%s report: %s", name, p.Name, o.Meta.Why, findings(o), o.Dir)
					case exp == card.Violated && got:
						t.Errorf("promise table: %s violates %s (%s); the run held (observed %v)", name, p.Name, why, o.Result.Observed)
					}
				})
			}
		})
	}
}
