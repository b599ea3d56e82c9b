package suite_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/checker"
	"github.com/lockfault/lockfault/cluster"
	"github.com/lockfault/lockfault/hunt"
	"github.com/lockfault/lockfault/lockimpl"
	"github.com/lockfault/lockfault/runner"
	"github.com/lockfault/lockfault/scenarios"
)

// minoritySchedule is a hunt schedule of a cluster lock, one the generator
// draws for a lock without known limits (hunt/generate.go: the topology,
// a careful client, the cut's length), with 6 cycles instead of 2 (as the
// hunt gives a minimal scenario more cycles): at each grant the key's
// master is cut off in a minority with the holder on its side, for the
// node timeout and 1.6 TTL more. The holder goes on being granted there
// until the cut-off master stops taking writes, while the majority fails
// it over to its replica, which never got those grants, and grants the
// other client. Three cycles in four show the overlap (the holder's last
// grant there must come late enough before the master stops taking writes:
// 45 of 60 cycles in 10 runs, 28 November 2026): six cycles all miss it
// in about one run in 4000.
func minoritySchedule() *hunt.Schedule {
	ttl := 2 * time.Second
	return &hunt.Schedule{Seed: 1, Index: 2, TTL: ttl, Cycles: 6,
		Topology: scenarios.Topology{Kind: lockfault.Cluster, Masters: 3, Replicas: 1, Persistence: "aof-always"},
		Workload: scenarios.Workload{Clients: 2, Resource: "order", Hold: scenarios.Duration(ttl * 3 / 10), HoldUntilValid: scenarios.Duration(ttl / 10)},
		Events: []hunt.Event{{Fault: "cluster-minority-partition", Target: lockfault.TargetKeyMaster, Params: map[string]string{"clients": lockfault.TargetHolder},
			Dur: cluster.DefaultNodeTimeout + ttl*16/10}}}
}

// runSchedule runs a hunt schedule against a lock as the hunt does (its
// Runner and its judgement): the violations found, and why the run proved
// nothing ("" if it did).
func runSchedule(t *testing.T, lock string, s *hunt.Schedule) ([]hunt.Fingerprint, string) {
	t.Helper()
	ctx := context.Background()
	subj, err := runner.BuiltIn(ctx, lock)
	if err != nil {
		t.Fatal(err)
	}
	out, err := hunt.Runner(subj, runner.Options{Backend: backend()}, t.TempDir())(ctx, s.Compile(s.Name(), lock, []string{checker.ClassSafe}))
	if err != nil {
		t.Fatalf("%s: %v", lock, err)
	}
	for _, f := range out.Result.Findings {
		t.Logf("%s: cycle %d: %s/%s: %s", lock, f.Cycle, f.Class, f.Kind, f.Detail)
	}
	return hunt.Fingerprints(out.Result, subj.Info, s.TTL), hunt.Unjudged(out.Result, subj.Info, s.TTL)
}

// The hunt's cluster faults find what only they can: single-cluster, with
// no known limits, trusts a grant of a master cut off in a minority for
// its whole TTL (cluster/minority-grant), and a hunt schedule that cuts
// the key's master off with the holder shows the overlap; the same
// schedule against cluster-capped-validity (its validity ends before the
// majority can fail the master over) finds nothing, and proves something.
// A hunt of single-cluster as it ships never draws the cut: its known
// limits (hunt.BuiltInLimits) exclude it. Heavy (a cluster, 6 cycles of
// a failover, twice; about two minutes):
// go test ./suite -run TestHuntFindsMinorityGrant -count=1
func TestHuntFindsMinorityGrant(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	t.Parallel()
	info, _ := lockimpl.Lookup("single-cluster")
	if slices.Contains(hunt.NewSpace(info, hunt.BuiltInLimits("single-cluster")).Faults, "cluster-minority-partition") {
		t.Fatal("single-cluster's hunt draws the minority cut, one of its known limits")
	}
	s := minoritySchedule()
	t.Run("single-cluster", func(t *testing.T) {
		t.Parallel()
		if fps, _ := runSchedule(t, "single-cluster", s); !slices.ContainsFunc(fps, func(f hunt.Fingerprint) bool { return f.Class == checker.ClassOverlap }) {
			t.Errorf("single-cluster under %v: found %v, want an overlap", s.Faults(), fps)
		}
	})
	t.Run("cluster-capped-validity", func(t *testing.T) {
		t.Parallel()
		if fps, why := runSchedule(t, "cluster-capped-validity", s); len(fps) > 0 || why != "" {
			t.Errorf("cluster-capped-validity under %v: found %v (unjudged: %q), want nothing found, judged", s.Faults(), fps, why)
		}
	})
}
