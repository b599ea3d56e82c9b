package faults

import (
	"context"
	"testing"
	"time"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/cluster"
)

// A cluster-failover's check reads the cluster's view: with the master
// still serving (no failover happened), no replica of it serves its slots,
// and the step is without effect. (The check is prepared on the master, as
// the runner does before injecting; nothing is injected.)
func TestClusterFailoverEffectAbsentWithoutFailover(t *testing.T) {
	e, _ := newEnv(t, cluster.Topology{Kind: lockfault.Cluster, Masters: 3, Replicas: 1, NodeTimeout: time.Second})
	check := Prove(context.Background(), "cluster-failover", e, "n1", Params{})
	if check == nil {
		t.Fatal("no effect check")
	}
	eff := check(context.Background())
	t.Logf("effect: %+v", eff)
	if eff.Seen || eff.Unchecked {
		t.Fatalf("effect with no failover: %+v, want not seen", eff)
	}
}
