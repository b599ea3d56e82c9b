package runner

import (
	"context"
	"testing"

	"github.com/lockfault/lockfault/checker"
	"github.com/lockfault/lockfault/history"
	"github.com/lockfault/lockfault/lockimpl"
	"github.com/lockfault/lockfault/scenarios"
)

// workload.round: worker records every step with its own invoke and
// completion, in the order the worker ran them, and the resource accesses
// fall inside their critical section.
func TestWorkerRoundRecordsEveryStep(t *testing.T) {
	src := `name: round-test
topology: {kind: standalone}
lock: {name: single, ttl: 5s, wait: 5s}
workload: {clients: 3, hold: 5ms, round: worker}
nemesis:
  cycles: 1
  steps:
    - {sleep: 1s}
expect: [safe]
`
	out, evs := runInline(t, "round-test", src)
	if !out.Meta.Matched || out.Result.Stats.Grants < 10 {
		t.Fatalf("verdict %s, %d grants: %s", out.Result.Verdict, out.Result.Stats.Grants, out.Meta.Why)
	}
	type step struct{ invoke, done int64 }
	steps := map[string]map[string]*step{} // lease -> op -> times
	var reads []history.Event
	for _, e := range evs {
		if e.Kind == history.Access {
			reads = append(reads, e)
			continue
		}
		if e.Lease == "" || (e.Op != "acquire" && e.Op != "cs" && e.Op != "release") {
			continue
		}
		if steps[e.Lease] == nil {
			steps[e.Lease] = map[string]*step{}
		}
		s := steps[e.Lease][e.Op]
		if s == nil {
			s = &step{}
			steps[e.Lease][e.Op] = s
		}
		if e.Kind == history.Invoke {
			s.invoke = e.Time
		} else {
			s.done = e.Time
		}
	}
	full := 0
	for lease, ops := range steps {
		a, c, r := ops["acquire"], ops["cs"], ops["release"]
		if a == nil || a.invoke == 0 {
			t.Fatalf("lease %s: no acquire invoke", lease)
		}
		if c == nil || r == nil {
			continue // a round cut by the end of the run
		}
		full++
		if !(a.invoke <= a.done && a.done <= c.invoke && c.invoke <= c.done && c.done <= r.invoke && r.invoke <= r.done) {
			t.Errorf("lease %s: steps out of order: acquire %+v cs %+v release %+v", lease, *a, *c, *r)
		}
		for _, e := range reads {
			if e.Lease == lease && (e.Time < c.invoke || e.Time > c.done) {
				t.Errorf("lease %s: %s at %d outside its section [%d, %d]", lease, e.Access, e.Time, c.invoke, c.done)
			}
		}
	}
	if full < 10 {
		t.Fatalf("%d complete rounds, want at least 10", full)
	}
}

// Rounds run by the worker still expose a broken lock: C2's plain-DEL
// release under the stall overlaps in round mode as well.
func TestWorkerRoundStillFindsOverlap(t *testing.T) {
	opt := Options{Backend: "process", ReportsDir: t.TempDir()}
	sc, err := scenarios.Load("del-release-stall")
	if err != nil {
		t.Fatal(err)
	}
	sc.Workload.Round = scenarios.RoundWorker
	out, err := Run(context.Background(), plan(t, sc, nil, Overrides{Cycles: 2}), opt)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := out.Result.Rate(checker.ClassOverlap); n == 0 || !out.Meta.Matched {
		t.Fatalf("verdict %s (observed %v), overlap in %d cycles: %s", out.Result.Verdict, out.Result.Observed, n, out.Meta.Why)
	}
}

// The key a cluster's key-master follows is the one the subject's lock
// keeps: "lock:<resource>" for a lock lockfault ships, the resource as is
// for a library worker's (whose slot, for "order", is another master's).
func TestLockKeyFollowsTheSubjectsKey(t *testing.T) {
	sc := &scenarios.Scenario{Workload: scenarios.Workload{Resource: "order"}}
	shipped := Subject{Info: lockimpl.Info{Name: "single-cluster"}, Shipped: true}
	worker := Subject{Info: lockimpl.Info{Name: "redis-py-cluster"}, Command: []string{"/usr/bin/python3", "worker_cluster.py"}}
	for _, c := range []struct {
		keys int
		s    Subject
		want string
	}{
		{1, shipped, "lock:order"},
		{1, worker, "order"},
		{3, shipped, "lock:order-1"},
		{3, worker, "order-1"},
	} {
		sc.Workload.Keys = c.keys
		if got := lockKey(sc, c.s); got != c.want {
			t.Errorf("keys %d, %s: lock key %q, want %q", c.keys, c.s, got, c.want)
		}
	}
}
