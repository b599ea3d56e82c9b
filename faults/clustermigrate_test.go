package faults

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockfault/lockfault"
	"github.com/lockfault/lockfault/cluster"
)

// The lock key's slot moves in steps, each one proven: after begin the
// source answers ASK for a key of the slot it does not have (and still
// serves the lock key), after move it answers ASK for the lock key too,
// which the destination serves to a client that says ASKING, with its
// expiry; after finish the source answers MOVED to the destination's
// announced proxy and key-master is the destination. A step's check that
// ran where the step did not (move's check with the keys still on the
// source) is not seen. The heal finishes a migration left half done.
func TestClusterMigrateSlotSteps(t *testing.T) {
	ctx := context.Background()
	e, _ := newEnv(t, cluster.Topology{Kind: lockfault.Cluster, Masters: 3, Replicas: 1, NodeTimeout: time.Second})
	c := e.c
	c.LockKey = "lock:order" // slot 9975: n2's
	if cluster.KeySlot("{lock:order}other") != cluster.KeySlot(c.LockKey) {
		t.Fatal("the hash-tagged key is not in the lock key's slot")
	}
	n2, n3 := c.Member("n2"), c.Member("n3")
	if _, err := c.Do(ctx, n2, "SET", c.LockKey, "token-A", "PX", 60000); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Do(ctx, n2, "SET", "{lock:order}other", "x"); err != nil {
		t.Fatal(err)
	}
	n3Addr, _ := c.Announced(n3)
	redirect := func(m *cluster.Member, key string) string {
		t.Helper()
		v, err := c.Do(ctx, m, "GET", key)
		if err == nil {
			return "value " + v.(string)
		}
		return err.Error()
	}

	_, eff := proveAndInject(t, e, "cluster-migrate-slot", "key-master", Params{"step": "begin"})
	if !eff.Seen {
		t.Fatalf("begin: %+v, want the slot seen migrating and importing", eff)
	}
	if got := redirect(n2, "{lock:order}absent"); got != "ASK 9975 "+n3Addr {
		t.Fatalf("after begin, n2 answers %q for a key it lacks, want ASK to n3's proxy %s", got, n3Addr)
	}
	if got := redirect(n2, c.LockKey); got != "value token-A" {
		t.Fatalf("after begin, n2 answers %q for the lock key it still has", got)
	}
	// move's check before any move: the keys are still on the source.
	if check := Prove(ctx, "cluster-migrate-slot", e, "key-master", Params{"step": "move"}); check == nil {
		t.Fatal("no check for step move")
	} else if eff := check(ctx); eff.Seen || eff.Unchecked {
		t.Fatalf("move's check with no move: %+v, want not seen", eff)
	}

	_, eff = proveAndInject(t, e, "cluster-migrate-slot", "key-master", Params{"step": "move"})
	if !eff.Seen || !strings.Contains(eff.What, "holds 0 key(s) on n2, 2 on n3") {
		t.Fatalf("move: %+v, want both keys seen on n3", eff)
	}
	if got := redirect(n2, c.LockKey); got != "ASK 9975 "+n3Addr {
		t.Fatalf("after move, n2 answers %q for the lock key, want ASK to %s", got, n3Addr)
	}
	r := redis.NewClient(&redis.Options{Addr: n3.Node.Addr()})
	pipe := r.Pipeline()
	pipe.Do(ctx, "ASKING")
	get := pipe.Get(ctx, c.LockKey)
	pipe.Do(ctx, "ASKING") // good for one command
	pttl := pipe.PTTL(ctx, c.LockKey)
	pipe.Exec(ctx)
	r.Close()
	if get.Val() != "token-A" || pttl.Val() <= 0 || pttl.Val() > time.Minute {
		t.Fatalf("n3 after ASKING: %v %v (ttl %v), want token-A with its expiry", get.Val(), get.Err(), pttl.Val())
	}
	if km, _ := c.Resolve(lockfault.TargetKeyMaster); km[0] != n2 {
		t.Fatalf("key-master during the migration: %s, want n2 (the source until finish)", km[0].Name)
	}

	_, eff = proveAndInject(t, e, "cluster-migrate-slot", "key-master", Params{"step": "finish"})
	if !eff.Seen || !strings.Contains(eff.What, "from n2 to n3") {
		t.Fatalf("finish: %+v, want the slot seen on n3", eff)
	}
	if got := redirect(n2, c.LockKey); got != "MOVED 9975 "+n3Addr {
		t.Fatalf("after finish, n2 answers %q, want MOVED to %s", got, n3Addr)
	}
	if got := redirect(n3, c.LockKey); got != "value token-A" {
		t.Fatalf("after finish, n3 answers %q", got)
	}
	if km, _ := c.Resolve(lockfault.TargetKeyMaster); km[0] != n3 {
		t.Fatalf("key-master after finish: %s, want n3", km[0].Name)
	}

	// All steps at once, to the next master by name (n1, wrapping).
	_, eff = proveAndInject(t, e, "cluster-migrate-slot", "key-master", nil)
	if !eff.Seen || !strings.Contains(eff.What, "from n3 to n1") {
		t.Fatalf("all: %+v, want the slot seen on n1", eff)
	}
	if got := redirect(c.Member("n1"), c.LockKey); got != "value token-A" {
		t.Fatalf("after all, n1 answers %q", got)
	}

	// Half done, then healed: the heal moves the keys and the slot.
	h, _ := proveAndInject(t, e, "cluster-migrate-slot", "key-master", Params{"step": "begin", "to": "n2"})
	if h == nil {
		t.Fatal("begin returned no heal")
	}
	if err := h(ctx); err != nil {
		t.Fatalf("heal: %v", err)
	}
	if km, _ := c.Resolve(lockfault.TargetKeyMaster); km[0] != n2 {
		t.Fatalf("key-master after the heal: %s, want n2", km[0].Name)
	}
	if got := redirect(n2, c.LockKey); got != "value token-A" {
		t.Fatalf("after the heal, n2 answers %q", got)
	}
}
