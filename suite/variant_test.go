package suite_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/lockimpl"
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
		locks := []string{p.Broken, p.Correct, p.Broken + noFailpoints}
		if p.Cluster != nil {
			locks = append(locks, p.Cluster.Broken, p.Cluster.Correct, p.Cluster.Broken+noFailpoints)
		}
		for _, lock := range locks {
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

// A lock on a cluster runs a property written for one master on the
// cluster topology, or as the scenario's cluster variant when it has one;
// a property without a cluster pair is not claimed, with its reason.
func TestClusterLocksRunOnACluster(t *testing.T) {
	info, ok := lockimpl.Lookup("broken-correct" + clusterTwin)
	if !ok {
		t.Fatal("no cluster twin of broken-correct")
	}
	apply, notClaimed := suite.For(info)
	for _, p := range apply {
		sc, err := p.LoadFor(info)
		if err != nil {
			t.Fatal(err)
		}
		if sc.Topology.Kind != lockfault.Cluster {
			t.Errorf("%s runs on %s for a cluster lock", p.Name, sc.Topology.Kind)
		}
		if p.Scenario == "failover-async-replica" && sc.Variant != suite.VariantCluster {
			t.Errorf("%s runs variant %q on a cluster, want %q", p.Name, sc.Variant, suite.VariantCluster)
		}
	}
	for _, name := range []string{"exclusion/no-faults", "failover/async-replica", "clock/node-jump"} {
		if _, no := notClaimed[name]; no {
			t.Errorf("%s not claimed by %s: %s", name, info.Name, notClaimed[name])
		}
	}
	if why := notClaimed["failover/sentinel"]; !strings.Contains(why, "no Sentinels") {
		t.Errorf("failover/sentinel on a cluster: %q, want the reason it does not run there", why)
	}
}
