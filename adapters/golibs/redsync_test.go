package golibs

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockfault/lockfault/lockimpl"
)

func newRedsyncT(t *testing.T, masters []string) lockimpl.Lock {
	t.Helper()
	l, err := lockimpl.New("redsync", lockimpl.Config{Endpoints: lockimpl.Endpoints{Masters: masters}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func TestRedsyncLeaseExcludesAndReleaseFrees(t *testing.T) {
	for _, n := range []int{1, 5} {
		t.Run(map[int]string{1: "one-master", 5: "five-masters"}[n], func(t *testing.T) {
			ctx := context.Background()
			addrs, _ := startRedisNodes(t, n)
			a, b := newRedsyncT(t, addrs), newRedsyncT(t, addrs)
			const ttl = 10 * time.Second
			before := time.Now()
			la, err := a.Acquire(ctx, "r", lockimpl.AcquireOptions{TTL: ttl})
			if err != nil {
				t.Fatal(err)
			}
			if la.Validity <= 0 || la.Validity >= ttl-ttl/100 {
				t.Errorf("validity %v, want in (0, %v)", la.Validity, ttl-ttl/100)
			}
			if la.ValidUntil.Before(before) || la.ValidUntil.After(time.Now().Add(ttl)) {
				t.Errorf("valid until %v, not within a TTL of now", la.ValidUntil)
			}
			for i, c := range multiRawClients(t, addrs) {
				if v := multiKeyValue(t, c, lockimpl.KeyFor("r")); v != la.Token {
					t.Errorf("master %d holds %q, want the lease token %q", i, v, la.Token)
				}
			}
			refusedWhileHeld(t, b, "r", ttl)
			lb := handOver(t, a, b, la, "r", ttl, nil)
			if err := b.Release(ctx, lb); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestRedsyncWaitsForTheHolder(t *testing.T) {
	addrs, _ := startRedisNodes(t, 3)
	waitsForHolder(t, newRedsyncT(t, addrs), newRedsyncT(t, addrs))
}

func TestRedsyncExtend(t *testing.T) {
	ctx := context.Background()
	addrs, _ := startRedisNodes(t, 3)
	l := newRedsyncT(t, addrs)
	// Redsync bounds each request by 5% of the expiry: long TTLs keep that
	// far above any scheduling delay of a loaded test machine.
	lease, err := l.Acquire(ctx, "e", lockimpl.AcquireOptions{TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ex := l.(lockimpl.Extender)
	if err := ex.Extend(ctx, lease, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if lease.Validity <= 10*time.Second || lease.Validity > 30*time.Second {
		t.Errorf("validity after extend %v, want in (10s, 30s]", lease.Validity)
	}
	for i, c := range multiRawClients(t, addrs) {
		if pttl, err := c.PTTL(ctx, lockimpl.KeyFor("e")).Result(); err != nil || pttl <= 10*time.Second {
			t.Errorf("master %d: pttl %v err %v, want more than 10s", i, pttl, err)
		}
	}
	if err := ex.Extend(ctx, &lockimpl.Lease{Resource: "e", Token: "someone-else"}, time.Minute); !errors.Is(err, lockimpl.ErrNotHeld) {
		t.Errorf("extend with a foreign token: %v, want ErrNotHeld", err)
	}
	// A lease survives a new lock instance (a worker re-pointing its endpoints).
	l2 := newRedsyncT(t, addrs)
	if err := l2.(lockimpl.Extender).Extend(ctx, lease, 20*time.Second); err != nil {
		t.Fatalf("extend through another instance: %v", err)
	}
	if err := l2.Release(ctx, lease); err != nil {
		t.Fatalf("release through another instance: %v", err)
	}
}

func TestRedsyncFailsWithoutAQuorum(t *testing.T) {
	ctx := context.Background()
	addrs, nodes := startRedisNodes(t, 5)
	l := newRedsyncT(t, addrs)
	killNodes(t, nodes[2], nodes[3], nodes[4])
	_, err := l.Acquire(ctx, "q", lockimpl.AcquireOptions{TTL: 20 * time.Second})
	if !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Fatalf("2 of 5 masters up: %v, want ErrNotAcquired (the dead masters refused the connection)", err)
	}
	for i, c := range multiRawClients(t, addrs[:2]) {
		if v := multiKeyValue(t, c, lockimpl.KeyFor("q")); v != "" {
			t.Errorf("reachable master %d keeps %q", i, v)
		}
	}
}
