package suite_test

import (
	"testing"

	"github.com/lockfault/lockfault/lockimpl"
	"github.com/lockfault/lockfault/suite"
)

// mutations: for each property, a lock broken in exactly the way the
// property targets (broken_test.go) and a correct lock of the same kind.
// The suite must fail the broken one and pass the correct one; a property
// that cannot fail is a defect.
var mutations = []struct {
	property string
	broken   string // must be violated
	correct  string // must hold
}{
	{"exclusion/no-faults", "broken-ignore-nx", "broken-correct"},
	{"crash/frees-within-ttl", "broken-no-ttl", "broken-correct"},
	{"stale/release-after-pause", "broken-del-release", "broken-correct"},
	{"stale/write-fenced", "broken-const-fence", "fenced"},
	{"extend/after-pause", "broken-blind-extend", "broken-correct"},
	{"validity/slow-acquire", "broken-validity-from-end", "broken-correct"},
	{"validity/paused-acquire", "broken-validity-from-end", "broken-correct"},
	{"extend/validity-from-start", "broken-extend-from-end", "broken-correct"},
	{"extend/paused", "broken-extend-from-end", "broken-correct"},
	{"clock/client-steps", "broken-wall-clock", "broken-correct"},
	// The slip of clock/node-jump and clock/node-drift is resting safety on the key's expiry
	// alone: the correct lock adds fencing tokens the resource checks.
	{"clock/node-jump", "broken-correct", "fenced"},
	{"clock/node-drift", "broken-correct", "fenced"},
	{"clock/masters-jump", "redlock", "quorum-time-fence"},
	{"identity/old-lease", "broken-token-per-client", "broken-correct"},
	{"identity/extend-old-lease", "broken-blind-extend", "broken-correct"},
	{"identity/restart-same-name", "broken-name-identity", "broken-correct"},
	{"reentrancy/counts", "broken-uncounted-reentry", "redisson"},
	{"reentrancy/watchdog", "broken-reentry-watchdog", "reentrant-watchdog"},
	{"reentrancy/expiry", "broken-local-reentry", "reentrant-watchdog"},
	{"liveness/holder-partition", "broken-no-ttl", "broken-correct"},
	{"crash/mid-acquire", "broken-no-ttl", "broken-correct"},
	{"stale/release-mid-release", "broken-get-then-del", "broken-correct"},
	{"failover/async-replica", "broken-correct", "acked"},
	{"failover/sentinel", "broken-correct", "acked"},
	{"fencing/monotonic", "broken-client-fence", "fenced"},
	{"fencing/node-restart", "broken-memory-fence", "time-fence"},
	{"fencing/failover", "broken-memory-fence", "time-fence"},
	{"extend/partition", "broken-swallow-extend-error", "broken-correct"},
	{"renewal/keeps-live-holder", "broken-no-renewal", "redisson"},
	{"renewal/fails-while-valid", "broken-renew-on-error", "watchdog"},
	{"renewal/stale-after-pause", "broken-blind-renewal", "watchdog"},
	{"renewal/validity-from-start", "broken-renew-from-end", "watchdog"},
	{"renewal/node-paused", "broken-renew-on-error", "watchdog"},
	{"extend/majority-restart", "broken-extend-any-master", "redlock"},
	{"extend/minority-down", "broken-extend-every-master", "redlock"},
}

// TestMutations runs every property against its broken and its correct
// lock: go test -run 'TestMutations/stale/release-after-pause' ./suite
//
// Each side runs 2 cycles of the property (1 with -short): every broken
// lock is caught in each cycle, so 2 keep the test deterministic at a
// fraction of the properties' own 3 cycles (TestPromises uses those).
// Properties run in parallel, as many at a time as go test's -parallel
// (GOMAXPROCS: 2 on the test machine, the suite's own default).
func TestMutations(t *testing.T) {
	cycles := 2
	if testing.Short() {
		cycles = 1
	}
	for _, m := range mutations {
		t.Run(m.property, func(t *testing.T) {
			t.Parallel()
			t.Run("broken", func(t *testing.T) {
				o := runProperty(t, m.property, m.broken, cycles)
				if held(o) {
					t.Errorf("%s held against %s, a lock broken in exactly the way it targets: the property cannot fail (observed %v)",
						m.property, m.broken, o.Result.Observed)
				}
			})
			t.Run("correct", func(t *testing.T) {
				o := runProperty(t, m.property, m.correct, cycles)
				if !held(o) {
					t.Errorf("%s violated by the correct lock %s: %s\n%s report: %s", m.property, m.correct, o.Meta.Why, findings(o), o.Dir)
				}
			})
		})
	}
}

// Every property has a mutation test, and each broken lock claims what its
// property requires (else the property would be skipped, not failed).
func TestEveryPropertyHasAMutation(t *testing.T) {
	have := map[string]bool{}
	for _, m := range mutations {
		have[m.property] = true
		p, ok := suite.Lookup(m.property)
		if !ok {
			t.Errorf("mutation for unknown property %s", m.property)
			continue
		}
		for _, l := range []string{m.broken, m.correct} {
			info, ok := lockimpl.Lookup(l)
			if !ok {
				t.Errorf("%s: no lock %s", m.property, l)
				continue
			}
			if ok, why := p.Applies(info); !ok {
				t.Errorf("%s does not apply to %s: %s", m.property, l, why)
			}
		}
	}
	for _, p := range suite.All() {
		if !have[p.Name] {
			t.Errorf("property %s has no mutation test", p.Name)
		}
	}
}
