package suite_test

import (
	"strings"
	"testing"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/lockimpl"
	"github.com/lockfault/lockfault/suite"
	"github.com/lockfault/lockfault/worker"
)

// TestMutations runs every property against its broken and its correct
// lock: go test -run 'TestMutations/stale/release-after-pause' ./suite
//
// Each side runs 2 cycles of the property (1 with -short): every broken
// lock is caught in each cycle, so 2 keep the test deterministic at a
// fraction of the properties' own 3 cycles (TestPromises uses those).
// Both sides of every property run in parallel, as many at a time as go
// test's -parallel (this package's default: defaultParallel, run_test.go).
// A property that runs on a Redis Cluster too (Property.Cluster) has its
// cluster pair run as well, on the cluster topology:
// go test -run 'TestMutations/exclusion/no-faults/cluster' ./suite
func TestMutations(t *testing.T) {
	cycles := 2
	if testing.Short() {
		cycles = 1
	}
	for _, p := range suite.All() {
		t.Run(p.Name, func(t *testing.T) {
			t.Parallel()
			mutationPair(t, p, suite.Pair{Broken: p.Broken, Correct: p.Correct}, cycles)
			if p.Cluster != nil {
				t.Run("cluster", func(t *testing.T) {
					t.Parallel()
					mutationPair(t, p, *p.Cluster, cycles)
				})
			}
		})
	}
}

// mutationPair runs a property against both locks of a mutation pair: the
// broken one must not hold it, the correct one must.
func mutationPair(t *testing.T, p suite.Property, pair suite.Pair, cycles int) {
	t.Run("broken", func(t *testing.T) {
		t.Parallel()
		o := runProperty(t, p.Name, pair.Broken, cycles)
		if held(o) {
			t.Errorf("%s held against %s, a lock broken in exactly the way it targets: the property cannot fail (observed %v)",
				p.Name, pair.Broken, o.Result.Observed)
		}
	})
	t.Run("correct", func(t *testing.T) {
		t.Parallel()
		skipUnmovedClock(t, p.Name, pair.Correct)
		o := runProperty(t, p.Name, pair.Correct, cycles)
		if !held(o) {
			t.Errorf("%s violated by the correct lock %s: %s\n%s report: %s", p.Name, pair.Correct, o.Meta.Why, findings(o), o.Dir)
		}
	})
}

// skipUnmovedClock skips clock/client-steps against a lock that reads
// time.Now when this test binary, every built-in lock's worker here, was
// built without the clock overlay: the step cannot reach the lock, and the
// property is rightly unknown (not exercised), neither held nor violated.
// make test builds the tests with the overlay.
func skipUnmovedClock(t *testing.T, prop, lock string) {
	t.Helper()
	if prop == "clock/client-steps" && !strings.HasPrefix(lock, "broken-wall-clock") && !worker.ClockInProcess {
		t.Skipf("%s against %s needs a worker whose time.Now a clock step moves: go test -overlay build/_clock/overlay.json -tags lockfault_clock (make test; make clock-overlay writes it)", prop, lock)
	}
}

// Every property names its mutation pair, and each lock of it claims what
// the property requires (else the property would be skipped, not failed).
func TestEveryPropertyHasAMutation(t *testing.T) {
	for _, p := range suite.All() {
		if p.Broken == "" || p.Correct == "" || p.Broken == p.Correct {
			t.Errorf("property %s names no mutation pair (Broken, Correct)", p.Name)
			continue
		}
		locks := []string{p.Broken, p.Correct}
		if c := p.Cluster; c != nil {
			if c.Broken == "" || c.Correct == "" || c.Broken == c.Correct {
				t.Errorf("property %s names no mutation pair on a cluster (Cluster.Broken, Cluster.Correct)", p.Name)
				continue
			}
			locks = append(locks, c.Broken, c.Correct)
			for _, l := range []string{c.Broken, c.Correct} {
				if info, _ := lockimpl.Lookup(l); info.Needs != lockfault.NeedsCluster {
					t.Errorf("%s: its cluster pair's lock %s needs %q, not a cluster", p.Name, l, info.Needs)
				}
			}
		}
		for _, l := range locks {
			info, ok := lockimpl.Lookup(l)
			if !ok {
				t.Errorf("%s: no lock %s", p.Name, l)
				continue
			}
			if ok, why := p.Applies(info); !ok {
				t.Errorf("%s does not apply to %s: %s", p.Name, l, why)
			}
		}
	}
}
