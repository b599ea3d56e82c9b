package faults

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/cluster"
)

// proveAndInject applies a step the way the runner does: its effect check
// is prepared before the injection and run after it.
func proveAndInject(t *testing.T, e *env, name, target string, p Params) (Heal, Effect) {
	t.Helper()
	ctx := context.Background()
	check := Prove(ctx, name, e, target, p)
	if check == nil {
		t.Fatalf("fault %s has no effect check", name)
	}
	h := inject(t, e, name, target, p)
	eff := check(ctx)
	t.Logf("%s on %s: seen %v: %s", name, target, eff.Seen, eff.What)
	return h, eff
}

// Every fault but client clock steps and failpoints (proved by their
// firing) has an effect check.
func TestEveryFaultProvesItsEffect(t *testing.T) {
	for _, n := range Names() {
		want := n != "clock-client" && n != "failpoint"
		if Proved(n) != want {
			t.Errorf("fault %s: effect check %v, want %v", n, Proved(n), want)
		}
	}
}

// A restart and a power loss replace the node's process; a second kill of a
// node already down attacks nothing.
func TestRestartEffects(t *testing.T) {
	e, _ := newEnv(t, cluster.Topology{Kind: lockfault.Standalone})
	ctx := context.Background()
	if _, eff := proveAndInject(t, e, "restart", "n1", nil); !eff.Seen || !strings.Contains(eff.What, "restarted as pid") {
		t.Errorf("restart: %+v, want a new pid seen", eff)
	}
	h, eff := proveAndInject(t, e, "kill", "n1", nil)
	if !eff.Seen || !strings.Contains(eff.What, "no process now") {
		t.Errorf("kill: %+v, want the pid gone", eff)
	}
	if _, eff := proveAndInject(t, e, "kill", "n1", nil); eff.Seen || !strings.Contains(eff.What, "no process to take down") {
		t.Errorf("kill of a node already down: %+v, want no effect", eff)
	}
	if err := h(ctx); err != nil {
		t.Fatal(err)
	}
}

// A cut of the replication link is in use when the replica follows the
// node; the peer link of a replica nobody replicates from is not.
func TestPartitionPeerEffect(t *testing.T) {
	e, _ := newEnv(t, cluster.Topology{Kind: lockfault.Replicated, Replicas: 1})
	ctx := context.Background()
	h, eff := proveAndInject(t, e, "partition-peer", "n1", nil)
	if !eff.Seen {
		t.Errorf("partition-peer of the primary: %+v, want an open connection seen", eff)
	}
	if err := h(ctx); err != nil {
		t.Fatal(err)
	}
	h, eff = proveAndInject(t, e, "partition-peer", "n2", nil)
	if eff.Seen || !strings.Contains(eff.What, "0 open connection") {
		t.Errorf("partition-peer of the replica: %+v, want no connection on its link", eff)
	}
	if err := h(ctx); err != nil {
		t.Fatal(err)
	}
}

// A node clock fault on an etcd node is refused before anything moves.
func TestNodeClockFaultRefusedOnEtcd(t *testing.T) {
	e, _ := newEnv(t, cluster.Topology{Kind: lockfault.Etcd})
	for _, c := range []struct {
		name string
		p    Params
	}{{"clock-jump", Params{"by": "+5s"}}, {"clock-drift", Params{"rate": "200ms"}}} {
		f, _, _ := Get(c.name)
		_, err := f.Inject(context.Background(), e, "all", c.p)
		if !errors.Is(err, ErrNotReachable) || !strings.Contains(err.Error(), "vDSO") {
			t.Errorf("%s on etcd: %v, want a refusal naming the vDSO", c.name, err)
		}
	}
}

// A reset partition keeps its link's port (a client still connects, and
// is reset); with no connection open as it began, its effect is left for
// the heal: seen when a client dialed the link while it lasted, not seen
// when nobody did.
func TestResetPartitionJudgedAtItsHeal(t *testing.T) {
	e, addrs := newEnv(t, cluster.Topology{Kind: lockfault.Standalone})
	ctx := context.Background()
	for _, dial := range []bool{true, false} {
		h, eff := proveAndInject(t, e, "partition-client", "n1", Params{"clients": "c1"})
		if eff.Seen || eff.Later == nil {
			t.Fatalf("dial %v: %+v, want not seen as it began (nobody had the link open) and a check left for the heal", dial, eff)
		}
		if dial {
			r := client(addrs["n1"])
			if err := r.Ping(ctx).Err(); err == nil {
				t.Fatal("PING crossed a reset link")
			}
			r.Close()
		}
		later := eff.Later(ctx)
		t.Logf("dial %v: at the heal: %+v", dial, later)
		if later.Seen != dial || !strings.Contains(later.What, "dialed while it lasted") {
			t.Errorf("dial %v: at the heal %+v, want seen %v", dial, later, dial)
		}
		if err := h(ctx); err != nil {
			t.Fatal(err)
		}
		r := client(addrs["n1"])
		if err := r.Ping(ctx).Err(); err != nil {
			t.Fatalf("after the heal (the port kept): %v", err)
		}
		r.Close()
	}
}
