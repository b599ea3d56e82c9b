package hunt

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/cluster"
	"github.com/lockfault/lockfault/lockimpl"
	"github.com/lockfault/lockfault/runner"
	"github.com/lockfault/lockfault/scenarios"
)

// checkClusterSchedule says what is wrong with a schedule of a cluster
// space ("" if nothing): at most one cluster fault a cycle, and none with
// a fault that would fail the run beside it (clusterConflict), each on the
// target it accepts with the params it accepts, the manual failover's
// mode one the known limits leave, and the schedule an ordinary scenario
// that passes the one validation (runner.Prepare).
func checkClusterSchedule(ctx context.Context, sp *Space, subj *runner.Subject, s *Schedule) string {
	n := 0
	for _, e := range s.Events {
		for _, o := range s.Events {
			// The pairs that fail the run (written out, not clusterConflict).
			down := slices.Contains([]string{"kill", "power-loss", "restart", "pause-node"}, o.Fault)
			peer := o.Fault == "partition-peer" && (e.Fault == "cluster-manual-failover" || e.Fault == "cluster-minority-partition")
			if clusterFault(e.Fault) && (down || peer) {
				return fmt.Sprintf("%v and %v in one cycle", e, o)
			}
		}
		if !clusterFault(e.Fault) {
			if e.Fault == "partition-peer" && e.Target != lockfault.TargetKeyMaster {
				return fmt.Sprintf("%v: the replication link is the key's master's", e)
			}
			if (e.Fault == "latency" || e.Fault == "partition-client") && e.Target != lockfault.TargetKeyMaster {
				// A cluster client sends nothing to a replica: the fault would
				// have no effect, and its cycle prove nothing.
				return fmt.Sprintf("%v: a client link fault on a node no client talks to", e)
			}
			continue
		}
		n++
		want := lockfault.TargetKeyMaster
		if e.Fault == "cluster-manual-failover" {
			want = lockfault.TargetKeyReplica
		}
		switch {
		case e.Target != want:
			return fmt.Sprintf("%v: on %s, want %s", e, e.Target, want)
		case e.Fault == "cluster-manual-failover" && (e.Dur != 0 || !slices.Contains(sp.values(e.Fault, "mode", manualModes), e.Params["mode"])):
			return fmt.Sprintf("%v: a manual failover has no length and a mode of %v", e, sp.values(e.Fault, "mode", manualModes))
		case e.Fault == "cluster-migrate-slot" && (e.Params["step"] == "all") != (e.Dur == 0):
			return fmt.Sprintf("%v: a half-done migration needs a length (the heal finishes it), a whole one none", e)
		case e.Fault == "cluster-minority-partition" && e.Dur <= cluster.DefaultNodeTimeout:
			return fmt.Sprintf("%v: a cut no longer than the node timeout fails nothing over", e)
		case e.Fault == "cluster-failover" && e.Params["how"] != "kill" && e.Params["how"] != "pause":
			return fmt.Sprintf("%v: how", e)
		}
	}
	if s.hasFault("cluster-failover") && slices.ContainsFunc(s.Events, func(e Event) bool { return e.Target == lockfault.TargetKeyReplica }) {
		return fmt.Sprintf("a fault on the key's replica beside a failover that leaves the new master without one: %v", s.Faults())
	}
	if n > 1 {
		return fmt.Sprintf("%d cluster faults in one cycle: %v", n, s.Faults())
	}
	sc := s.Compile(s.Name(), subj.Name(), []string{"safe"})
	data, err := sc.Marshal()
	if err != nil {
		return err.Error()
	}
	parsed, err := scenarios.Parse(s.Name()+".yaml", data)
	if err != nil {
		return fmt.Sprintf("does not parse: %v\n%s", err, data)
	}
	if _, err := runner.Prepare(ctx, parsed, subj, runner.Overrides{}); err != nil {
		return fmt.Sprintf("refused: %v\n%s", err, data)
	}
	return ""
}

// A lock that runs on a Redis Cluster is hunted with the cluster's own
// faults beside the generic ones: both generators and the mutations of the
// learning search draw the four (one a cycle, each on the target and with
// the params it accepts: a manual failover on the key's replica, in the
// modes the known limits leave), and every schedule they draw passes the
// one validation.
func TestClusterSpaceDrawsClusterFaults(t *testing.T) {
	ctx := context.Background()
	subj, err := runner.BuiltIn(ctx, "single-cluster")
	if err != nil {
		t.Fatal(err)
	}
	for _, known := range [][]string{nil, BuiltInLimits("single-cluster")} {
		for _, search := range Searches {
			sp := NewSpace(subj.Info, known)
			sp.Commands = sampleShapes()
			se, err := NewSearch(search, sp, 5)
			if err != nil {
				t.Fatal(err)
			}
			drawn, derived, modes := map[string]int{}, 0, map[string]bool{}
			for i := 0; i < 300; i++ {
				s := se.Next()
				var keys []string
				for _, e := range s.Events {
					keys = append(keys, e.Fault+"/"+e.Target+fmt.Sprint(e.Params))
					drawn[e.Fault]++
					modes[e.Params["mode"]] = true
					if clusterFault(e.Fault) && s.Parent > 0 {
						derived++
					}
				}
				se.Observe(s, Feedback{Keys: keys, Margin: testMargin(i)})
				if why := checkClusterSchedule(ctx, sp, &subj, s); why != "" {
					t.Fatalf("known %v, %s search, schedule %d (derived by %v): %s", known, search, i+1, s.Derived, why)
				}
			}
			for _, f := range clusterFaults {
				switch {
				case slices.Contains(excluded(known), f) && drawn[f] > 0:
					t.Errorf("known %v, %s search: drew %s %d times, a fault of the known limits", known, search, f, drawn[f])
				case !slices.Contains(excluded(known), f) && drawn[f] < 5:
					t.Errorf("known %v, %s search: drew %s %d times in 300 schedules", known, search, f, drawn[f])
				}
			}
			if search != SearchRandom && derived < 5 {
				t.Errorf("known %v, %s search: %d derived schedules have a cluster fault", known, search, derived)
			}
			if known != nil && (modes["force"] || modes["takeover"]) {
				t.Errorf("%s search drew a manual failover that may lose writes, under the failover limit", search)
			}
		}
	}
}

// Mutations keep a cluster fault valid: a new target or kind for it is
// drawn as the generator draws it (never a manual failover on the key's
// master), and no mutation adds a second cluster fault to a cycle.
func TestClusterMutationsKeepTargets(t *testing.T) {
	ctx := context.Background()
	subj, err := runner.BuiltIn(ctx, "single-cluster")
	if err != nil {
		t.Fatal(err)
	}
	sp := NewSpace(subj.Info, nil)
	sp.Commands = sampleShapes()
	g := NewPlainGenerator(sp, 3)
	base := g.Next()
	base.Index = 2
	for _, f := range clusterFaults {
		parent := base.clone()
		parent.Events = []Event{g.event(f, parent), g.event("latency", parent)}
		other := base.clone()
		other.Events = []Event{g.event("cluster-migrate-slot", other), g.event("partition-client", other)}
		for i := 0; i < 300; i++ {
			s := g.Mutate(parent, other)
			if why := checkClusterSchedule(ctx, sp, &subj, s); why != "" {
				t.Fatalf("%s mutated by %v: %s", f, s.Derived, why)
			}
		}
	}
}

// A half-done migration's "move" is its begin and its move at one moment
// (a move alone MIGRATEs to a master that does not import the slot), and
// one heal finishes both.
func TestMigrationMoveBeginsFirst(t *testing.T) {
	s := &Schedule{Seed: 1, Index: 2, TTL: time.Second, Cycles: 1, Topology: scenarios.Topology{Kind: lockfault.Cluster, Masters: 3, Replicas: 1},
		Workload: scenarios.Workload{Clients: 2, Hold: scenarios.Duration(300 * time.Millisecond), Resource: "order"},
		Events:   []Event{{Fault: "cluster-migrate-slot", Target: lockfault.TargetKeyMaster, Dur: time.Second, Params: map[string]string{"step": "move"}}}}
	var steps []string
	for _, st := range s.Compile(s.Name(), "single-cluster", nil).Nemesis.Steps {
		steps = append(steps, st.String())
	}
	got := strings.Join(steps, "; ")
	begin, move, heal := strings.Index(got, "step=begin"), strings.Index(got, "step=move"), strings.Index(got, "heal cluster-migrate-slot")
	if begin < 0 || move < begin || heal < move || strings.Count(got, "heal cluster-migrate-slot") != 1 {
		t.Fatalf("steps %s; want begin, move, then one heal", got)
	}
}

// The cluster's faults are the known limits of what the promise table
// says its cluster locks break: single-cluster loses grants on the
// cluster's failovers and to a minority master, so its hunt draws neither
// (but a manual failover that waits for the replica, and the slot
// migration it survives); redislock-cluster breaks only the minority
// split and still meets the cluster's failovers.
func TestClusterKnownLimits(t *testing.T) {
	if got := BuiltInLimits("single-cluster"); !slices.Equal(got, []string{"failover", "minority-partition", "node-clock"}) {
		t.Errorf("single-cluster's known limits: %v", got)
	}
	sp := NewSpace(lockimpl.Info{Name: "single-cluster", Needs: lockimpl.NeedsCluster}, BuiltInLimits("single-cluster"))
	for f, want := range map[string]bool{"cluster-failover": false, "cluster-minority-partition": false, "clock-jump": false,
		"cluster-manual-failover": true, "cluster-migrate-slot": true, "partition-peer": true, "kill": true} {
		if slices.Contains(sp.Faults, f) != want {
			t.Errorf("single-cluster's space %v: has %s %v, want %v", sp.Faults, f, !want, want)
		}
	}
	if got := sp.values("cluster-manual-failover", "mode", manualModes); !slices.Equal(got, []string{"default"}) {
		t.Errorf("single-cluster's manual failovers: %v, want [default]", got)
	}
	for lock, want := range map[string][]string{
		"redislock-cluster":   {"minority-partition", "node-clock"},
		"redsync-cluster":     {"latency", "minority-partition", "node-clock"},
		"redlock-cluster":     {"latency", "minority-partition", "node-clock"},
		"rueidislock-cluster": {"client-clock", "failover", "latency", "minority-partition", "node-clock"},
	} {
		if got := BuiltInLimits(lock); !slices.Equal(got, want) {
			t.Errorf("%s's known limits: %v, want %v (its promise table row)", lock, got, want)
		}
	}
	if got := LimitsOf([]string{"cluster/slot-migration"}); !slices.Equal(got, []string{"slot-migration"}) {
		t.Errorf("cluster/slot-migration's limit: %v", got)
	}
	sp = NewSpace(lockimpl.Info{Name: "x", Needs: lockimpl.NeedsCluster}, []string{"minority-partition", "slot-migration"})
	for _, f := range []string{"cluster-minority-partition", "cluster-migrate-slot"} {
		if slices.Contains(sp.Faults, f) {
			t.Errorf("space %v draws %s despite its known limits", sp.Faults, f)
		}
	}
	if !slices.Contains(sp.Faults, "cluster-failover") || len(sp.values("cluster-manual-failover", "mode", manualModes)) != 3 {
		t.Errorf("space %v without the failover limit lacks a failover", sp.Faults)
	}
}
