package faults

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/cluster"
)

// roleOf is the node's own answer to ROLE: master or slave.
func roleOf(t *testing.T, c *cluster.Cluster, name string) string {
	t.Helper()
	v, err := c.Do(context.Background(), c.Member(name), "ROLE")
	if err != nil {
		t.Fatalf("ROLE on %s: %v", name, err)
	}
	return v.([]any)[0].(string)
}

// The cluster fails a killed or cut-off master over to its replica by
// itself: the replica's ROLE becomes master and CLUSTER NODES gives it the
// slots; the heal brings the old master back as its replica.
// (No subtests: the test's name names its proxies, and a slash in it
// would break toxiproxy's API paths.)
func TestClusterFailoverKill(t *testing.T)  { testClusterFailover(t, "kill") }
func TestClusterFailoverPause(t *testing.T) { testClusterFailover(t, "pause") }

func testClusterFailover(t *testing.T, how string) {
	ctx := context.Background()
	e, _ := newEnv(t, cluster.Topology{Kind: lockfault.Cluster, Masters: 3, Replicas: 1, NodeTimeout: time.Second})
	c := e.c
	if r := roleOf(t, c, "n4"); r != "slave" {
		t.Fatalf("n4 is %s before the fault", r)
	}
	start := time.Now()
	h, eff := proveAndInject(t, e, "cluster-failover", "master", Params{"how": how, "within": "20s"})
	if !eff.Seen || !strings.Contains(eff.What, "n4 serves slots") {
		t.Fatalf("effect of the failover: %+v, want n4 seen serving n1's slots", eff)
	}
	t.Logf("failover took %v; notes %q", time.Since(start).Round(time.Millisecond), e.notes)
	if r := roleOf(t, c, "n4"); r != "master" {
		t.Fatalf("n4 is %s after the failover, want master", r)
	}
	v, err := c.Do(ctx, c.Member("n4"), "CLUSTER", "NODES")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(v.(string), "\n") {
		if strings.Contains(line, "myself") && (!strings.Contains(line, "master") || !strings.Contains(line, " 0-5460")) {
			t.Fatalf("n4 does not serve n1's slots: %s", line)
		}
	}
	if c.Member("n4").Role != cluster.RoleMaster || c.Member("n1").Role != cluster.RoleReplica {
		t.Fatalf("roles after the failover: n4 %s, n1 %s", c.Member("n4").Role, c.Member("n1").Role)
	}
	if ms, _ := c.Resolve("masters"); len(ms) != 3 || ms[0].Name != "n2" {
		t.Fatalf("masters after the failover: %v", names(ms))
	}
	if len(e.notes) != 1 || !strings.Contains(e.notes[0], "promoted n4 in place of n1") {
		t.Fatalf("notes %q", e.notes)
	}
	if err := h(ctx); err != nil {
		t.Fatalf("heal: %v", err)
	}
	if r := roleOf(t, c, "n1"); r != "slave" {
		t.Fatalf("n1 is %s after the heal, want a replica (of n4)", r)
	}
	if reps, err := c.ClusterReplicasOf(ctx, c.Member("n4")); err != nil || len(reps) != 1 || reps[0].Name != "n1" {
		t.Fatalf("n4's replicas after the heal: %v %v", names(reps), err)
	}
}

func names(ms []*cluster.Member) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Name)
	}
	return out
}

// A master without replicas cannot be failed over: refused, and nothing is
// done to it.
func TestClusterFailoverNeedsAReplica(t *testing.T) {
	e, _ := newEnv(t, cluster.Topology{Kind: lockfault.Cluster, Masters: 3, NodeTimeout: time.Second})
	f, _, _ := Get("cluster-failover")
	_, err := f.Inject(context.Background(), e, "n1", Params{})
	if err == nil || !strings.Contains(err.Error(), "n1 has no replica") {
		t.Fatalf("err = %v", err)
	}
	if !e.c.Member("n1").Node.Running() {
		t.Fatal("n1 was killed anyway")
	}
}

func TestClusterFailoverParams(t *testing.T) {
	for p, want := range map[string]string{"how=cut": `param how: "cut" is not allowed (allowed: kill, pause)`, "within=1h": "param within: 1h0m0s is out of range"} {
		k, v, _ := strings.Cut(p, "=")
		if err := Check("cluster-failover", Params{k: v}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", p, err, want)
		}
	}
}

// CLUSTER FAILOVER (each mode) on a replica makes it the master of its
// master's slots, and the old master its replica.
func TestClusterManualFailover(t *testing.T) {
	ctx := context.Background()
	e, _ := newEnv(t, cluster.Topology{Kind: lockfault.Cluster, Masters: 3, Replicas: 1, NodeTimeout: time.Second})
	c := e.c
	for i, mode := range []string{"default", "force", "takeover"} {
		// n4 and n1 trade places each time.
		rep, old := "n4", "n1"
		if i%2 == 1 {
			rep, old = old, rep
		}
		h, eff := proveAndInject(t, e, "cluster-manual-failover", rep, Params{"mode": mode, "within": "20s"})
		if h != nil {
			t.Fatalf("%s: a heal for a manual failover", mode)
		}
		if !eff.Seen {
			t.Fatalf("%s: effect %+v, want %s seen serving slots", mode, eff, rep)
		}
		if r := roleOf(t, c, rep); r != "master" {
			t.Fatalf("%s: %s is %s after the failover, want master", mode, rep, r)
		}
		if c.Member(rep).Role != cluster.RoleMaster || c.Member(old).Role != cluster.RoleReplica {
			t.Fatalf("%s: roles %s %s, %s %s", mode, rep, c.Member(rep).Role, old, c.Member(old).Role)
		}
		// The old master hears of its demotion a moment later.
		deadline := time.Now().Add(10 * time.Second)
		for roleOf(t, c, old) != "slave" {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %s is still a master 10s after the failover", mode, old)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err := c.WaitClusterOK(ctx, 20*time.Second); err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
	}
	t.Logf("notes %q", e.notes)
	f, _, _ := Get("cluster-manual-failover")
	if _, err := f.Inject(ctx, e, "n2", Params{}); err == nil || !strings.Contains(err.Error(), "n2 is a master now, not a replica") {
		t.Fatalf("failover on a master: %v", err)
	}
}

// The check reads the cluster's view: with no failover the replica serves
// nothing, and the step is without effect.
func TestClusterFailoverEffectAbsent(t *testing.T) {
	e, _ := newEnv(t, cluster.Topology{Kind: lockfault.Cluster, Masters: 3, Replicas: 1, NodeTimeout: time.Second})
	check := Prove(context.Background(), "cluster-manual-failover", e, "n4", Params{})
	if check == nil {
		t.Fatal("no effect check")
	}
	if eff := check(context.Background()); eff.Seen || eff.Unchecked {
		t.Fatalf("effect with no failover: %+v, want not seen", eff)
	}
}
